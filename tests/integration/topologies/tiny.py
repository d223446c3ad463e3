"""The smallest topology: one KafkaSpout task and one bolt in one worker (for control-plane tests)."""

from __future__ import annotations

from typing import Any

from streams import BasicBolt, KafkaSpout, Topology, TopologyBuilder


class Upper(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["value"])

    def execute(self, tuple: Any, collector: Any) -> None:  # noqa: A002
        collector.emit([str(tuple[0]).upper()])


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(), 1)
    b.set_bolt("upper", Upper(), 1).shuffle_grouping("lines")
    return b.create_topology("tiny", {"topology.workers": 1})
