"""Word count whose split hangs forever in ``execute`` on one line, once: the first worker that
runs it creates ``$SQUALL_TEST_HANG_MARKER`` and then never returns (a client call that never
comes back). With ``squall.worker.hang.timeout.secs`` at 5 s the worker exits as hung and is
restarted; its replacement finds the marker and splits the line."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from examples.wordcount import Count, words
from streams import BasicBolt, BasicOutputCollector, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple


class HangingSplit(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def __init__(self) -> None:
        self.executed = 0

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        marker = Path(os.environ["SQUALL_TEST_HANG_MARKER"])
        self.executed += 1
        if self.executed == 500 and not marker.exists():  # the 500th line (lines travel in packs: not offset 500)
            marker.write_text(str(os.getpid()))
            while True:
                time.sleep(1)
        for word in words(tuple[0]):
            collector.emit([word])


def topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 1)
    builder.set_bolt("split", HangingSplit(), 1).shuffle_grouping("lines")
    builder.set_bolt("count", Count(), 1).fields_grouping("split", ["word"])
    builder.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    # A 10 s message timeout bounds what the hang costs: trees lost with the hung worker replay after it (CI time).
    return builder.create_topology("hanging", {"topology.workers": 3, "squall.worker.hang.timeout.secs": 5, "topology.message.timeout.secs": 10})
