"""Word count in processing-time tumbling windows of 1 s: each word tuple is in exactly one
window, so the per-window counts add up to the plain word count."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from streams import BasicBolt, BasicOutputCollector, Duration, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple, TupleWindow, WindowedBolt

WORD = re.compile(r"[a-z']+")


class Split(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        for word in WORD.findall(tuple[0].lower()):
            collector.emit([word])


class PerSecond(WindowedBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"], stream="counts")

    def execute(self, window: TupleWindow) -> None:
        assert window.end - window.start == 1.0
        for word, n in Counter(t[0] for t in window.get()).items():
            self.collector.emit([word, n], stream="counts")


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 2)
    b.set_bolt("split", Split(), 2).shuffle_grouping("lines")
    b.set_bolt("count", PerSecond().with_tumbling_window(Duration(1.0)), 2).fields_grouping("split", ["word"])
    b.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    return b.create_topology("tumbling-wordcount", {"topology.workers": 2})
