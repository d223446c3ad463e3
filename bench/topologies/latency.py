"""The latency workload: a spout and three pass-through bolts that ack each tuple at once.

``lines`` (KafkaSpout, one record per tree) -> ``hop1`` -> ``hop2`` -> ``hop3``, shuffle grouped.
Each bolt emits its input anchored and acks it in ``execute`` (a BasicBolt), so a tree's
complete latency is transit and execute time only: no tick to wait for, unlike the word count's
and flights' aggregating bolts, which defer their acks to a 0.1 s tick. Storm 2.0 reports its
complete latency on a topology of this shape. The last bolt writes nothing out; the benchmark
counts what it executed.
"""

from __future__ import annotations

from typing import Any

from streams import BasicBolt, BasicOutputCollector, KafkaSpout, Topology, TopologyBuilder, Tuple


class PassThrough(BasicBolt):
    """Emit the input's value anchored to it (the last hop emits nothing); acked on return."""

    def __init__(self, last: bool = False) -> None:
        self.last = last

    def declare_output_fields(self, declarer: Any) -> None:
        if not self.last:
            declarer.declare(["value"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        if not self.last:
            collector.emit([tuple[0]])


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(), 2)
    b.set_bolt("hop1", PassThrough(), 2).shuffle_grouping("lines")
    b.set_bolt("hop2", PassThrough(), 2).shuffle_grouping("hop1")
    b.set_bolt("hop3", PassThrough(last=True), 2).shuffle_grouping("hop2")
    return b.create_topology("latency", {"topology.workers": 2, "squall.spout.tree.records": 1})
