"""Word count whose split fails about 10% of lines on their first delivery, after having
emitted half of the line's words (so a replay duplicates those words)."""

from __future__ import annotations

import zlib
from typing import Any

from examples.wordcount import Count, words
from streams import BasicBolt, BasicOutputCollector, FailedException, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple


class FlakySplit(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.failed_once: set[str] = set()

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        line = tuple[0]
        ws = words(line)
        flaky = zlib.crc32(line.encode()) % 10 == 0 and line not in self.failed_once
        for i, word in enumerate(ws):
            if flaky and i >= len(ws) // 2:
                self.failed_once.add(line)
                raise FailedException(f"first delivery of {tuple.where}")
            collector.emit([word])
        if flaky:
            self.failed_once.add(line)
            raise FailedException(f"first delivery of {tuple.where}")


def topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 2)
    builder.set_bolt("split", FlakySplit(), 1).shuffle_grouping("lines")
    builder.set_bolt("count", Count(), 2).fields_grouping("split", ["word"])
    builder.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    return builder.create_topology("flaky", {"topology.workers": 3})
