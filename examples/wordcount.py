"""Reliable word count: lines -> split (shuffle) -> count (fields on "word").

Tokenisation (fixed, documented): lowercase the line, then every match of ``[a-z']+``
is a word. The count bolt defers its acks until it has written its counts: on each tick
it writes ``(word, delta)`` for every word it saw since the last tick to the output topic,
the executor flushes that, and only then are the input tuples acked. So a tree is
acked only once its words are durable in the output, and ``squall run`` sums the deltas.

    squall run examples/wordcount.py [--input PATH] [--output counts.json]
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from streams import BasicBolt, BasicOutputCollector, Bolt, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple

WORD = re.compile(r"[a-z']+")


def words(line: str) -> list[str]:
    """The example's tokeniser: lowercase, then ``[a-z']+``."""
    return WORD.findall(line.lower())


class Split(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        for word in words(tuple[0]):
            collector.emit([word])


class Count(Bolt):
    """Counts words; on each tick writes the deltas, then acks the tuples they cover."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"], stream="counts")

    def get_component_configuration(self) -> dict[str, Any]:
        return {"topology.tick.tuple.freq.secs": 0.1}

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.delta: Counter[str] = Counter()
        self.unacked: list[Tuple] = []

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        if tuple.is_tick:
            self.write_and_ack()
            return
        self.delta[tuple[0]] += 1
        self.unacked.append(tuple)

    def write_and_ack(self) -> None:
        for word, n in self.delta.items():
            self.collector.emit([word, n], stream="counts")
        for t in self.unacked:
            self.collector.ack(t)
        self.delta.clear()
        self.unacked.clear()

    def cleanup(self) -> None:
        """The task is moving (rebalance) or stopping: write what it holds, so nothing replays."""
        self.write_and_ack()


def topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 2)
    builder.set_bolt("split", Split(), 1).shuffle_grouping("lines")
    builder.set_bolt("count", Count(), 2, num_tasks=4).fields_grouping("split", ["word"])  # 4 tasks: rebalance up to 4 executors
    builder.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    return builder.create_topology("wordcount", {"topology.workers": 4, "topology.acker.executors": 1})
