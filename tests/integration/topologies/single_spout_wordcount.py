"""Word count with one spout task alone in worker 0 (for the kill/restart test)."""

from __future__ import annotations

from examples.wordcount import Count, Split
from streams import KafkaSpout, RecordTranslator, Topology, TopologyBuilder


def topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 1)
    builder.set_bolt("split", Split(), 1).shuffle_grouping("lines")
    builder.set_bolt("count", Count(), 1).fields_grouping("split", ["word"])
    builder.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    # executors: lines, split, count, acker -> one per worker; w0 hosts only the spout
    return builder.create_topology("restart", {"topology.workers": 4, "topology.max.spout.pending": 500})
