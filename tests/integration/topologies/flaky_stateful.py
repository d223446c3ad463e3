"""The stateful word count whose count bolt fails about one word in 200, the first time it sees it,
after counting it: each failure rolls the task back to its last checkpoint and replays what ran since."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))

from wordcount_stateful import Split

from streams import KafkaSpout, KeyValueState, RecordTranslator, StatefulBolt, Topology, TopologyBuilder, Tuple


class FlakyCount(StatefulBolt):
    def init_state(self, state: KeyValueState) -> None:
        self.counts = state
        self.failed_once: set[Any] = set()

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        word = tuple[0]
        self.counts[word] = self.counts.get(word, 0) + 1  # counted, then failed: the rollback must undo it
        if zlib.crc32(repr(tuple.tid).encode()) % 200 == 0 and tuple.tid not in self.failed_once:
            self.failed_once.add(tuple.tid)
            self.collector.fail(tuple)
            return
        self.collector.ack(tuple)


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 2)
    b.set_bolt("split", Split(), 1).shuffle_grouping("lines")
    b.set_bolt("count", FlakyCount(), 2, num_tasks=4).fields_grouping("split", ["word"])
    b.set_state_output("count", kind="keyvalue")
    return b.create_topology("flaky-stateful", {"topology.workers": 3})
