"""KafkaSpout source options, driven by env: ``SQUALL_TEST_SOURCES`` is
``pattern:<regex>`` or ``latest:<topic>``; words are counted into the output topic."""

from __future__ import annotations

import os

from examples.wordcount import Count, Split
from streams import KafkaSpout, RecordTranslator, Topology, TopologyBuilder

how, _, arg = os.environ.get("SQUALL_TEST_SOURCES", "pattern:^$").partition(":")


def topology() -> Topology:
    b = TopologyBuilder()
    if how == "pattern":
        spout = KafkaSpout(pattern=arg, translator=RecordTranslator("line"))
    else:
        spout = KafkaSpout(arg, translator=RecordTranslator("line"), first_poll_offset="latest")
    b.set_spout("lines", spout, 2)
    b.set_bolt("split", Split(), 1).shuffle_grouping("lines")
    b.set_bolt("count", Count(), 1).fields_grouping("split", ["word"])
    b.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    return b.create_topology("sources", {"topology.workers": 2})
