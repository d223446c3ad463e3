"""Word count whose split bolt is slow: 4 ms per line (at most 250 lines/s), for the
adaptive bound on trees in flight (issue 13)."""

from __future__ import annotations

import time

from examples.wordcount import Count, Split
from streams import BasicOutputCollector, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple


class SlowSplit(Split):
    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        time.sleep(0.004)
        super().execute(tuple, collector)


def topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 2)
    builder.set_bolt("split", SlowSplit(), 1).shuffle_grouping("lines")
    builder.set_bolt("count", Count(), 1).fields_grouping("split", ["word"])
    builder.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    # No topology.max.spout.pending: the adaptive bound. A fixed 1000 per task would queue
    # 2000 lines at the split (8 s) and time them out at 5 s.
    return builder.create_topology("slowbolt", {"topology.workers": 2, "topology.message.timeout.secs": 5})
