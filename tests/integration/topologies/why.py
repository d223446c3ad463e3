"""Why did it fail? A topology with a bolt that raises on 1% of its tuples and a bolt that sleeps past the message timeout.

* ``lines`` (KafkaSpout, a tree per record) -> ``parse`` (shuffle) -> ``slow`` (fields on
  ``word``) -> ``count``.
* ``parse`` raises ValueError on a line whose crc32 is 0 mod 100 (about 1%), on every
  delivery: those lines are dead-lettered after their retries.
* ``slow`` sleeps past the message timeout on the first delivery of a word starting with
  ``zz``: that tree times out and is replayed (then it passes).
* ``topology.debug`` traces every tree (``squall.trace.sample.rate`` 1).
"""

from __future__ import annotations

import time
import zlib
from typing import Any

from examples.wordcount import Count, words
from streams import BasicBolt, BasicOutputCollector, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple

TIMEOUT_S = 3
SLEEP_S = TIMEOUT_S * 1.5 + 3
"""How long ``slow`` sleeps: past the latest moment the acker expires a tree (seconds). Its
RotatingMap (3 buckets) expires a tree between the timeout and 1.5 times it after its init,
plus a tick; a sleep shorter than that lets the tree complete at the acker after the spout's
own timeout replayed it, and the trace then shows no timeout."""


def fails(line: str) -> bool:
    """The lines ``parse`` raises on: crc32 % 100 == 0."""
    return zlib.crc32(line.encode()) % 100 == 0


class Parse(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        line = tuple[0]
        if fails(line):
            raise ValueError(f"cannot parse {line[:30]!r}")
        for word in words(line):
            collector.emit([word])


class Slow(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.slept: set[str] = set()

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        word = tuple[0]
        if word.startswith("zz") and word not in self.slept:
            self.slept.add(word)
            time.sleep(SLEEP_S)
        collector.emit([word])


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 1)
    b.set_bolt("parse", Parse(), 1).shuffle_grouping("lines")
    b.set_bolt("slow", Slow(), 1).fields_grouping("parse", ["word"])
    b.set_bolt("count", Count(), 1).fields_grouping("slow", ["word"])
    b.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    conf = {
        "topology.workers": 2,
        "topology.message.timeout.secs": TIMEOUT_S,
        "topology.debug": True,
        "squall.trace.sample.rate": 1.0,
        "squall.spout.tree.records": 1,
        "squall.spout.max.retries": 2,
    }
    return b.create_topology("why", conf)
