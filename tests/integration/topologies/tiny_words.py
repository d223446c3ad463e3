"""lines -> words: splits lines on whitespace and declares no output (what ``squall run`` says then)."""

from __future__ import annotations

from typing import Any

from streams import BasicBolt, BasicOutputCollector, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple


class Words(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        for w in str(tuple[0]).split():
            collector.emit([w])


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 1)
    b.set_bolt("words", Words(), 1).shuffle_grouping("lines")
    return b.create_topology("tiny-words", {"topology.workers": 1})
