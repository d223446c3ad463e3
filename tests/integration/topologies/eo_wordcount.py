"""The exactly-once word count under faults (issue 12's tests).

``split`` fails about 10% of lines on their batch's first attempt, after emitting half of
their words (so at-least-once counting would go wrong), and delays a third of its acks by
up to 0.3 s (acked on a later tick). ``count`` is examples/wordcount_exactly_once.py's
committer. Environment:

* ``SQUALL_TEST_OPAQUE=1``: an :class:`OpaqueKafkaSpout` whose batch 2 leaves partition 1
  out of its first attempt, and whose batch 2 first attempt fails (every tuple), so the
  replay differs from the first attempt and the batches in flight after it are replayed;
  the committer then uses OpaqueState.
* ``SQUALL_TEST_NO_FLAKES=1``: no random failures or delays.
"""

from __future__ import annotations

import os
import random
import re
import time
import zlib
from collections import Counter
from typing import Any

from streams import BatchBolt, Bolt, Committer, OpaqueKafkaSpout, RecordTranslator, Topology, TopologyBuilder, TransactionalKafkaSpout, Tuple
from streams.transactional.coordinator import Range
from streams.wire.naming import TP

WORD = re.compile(r"[a-z']+")
OPAQUE = os.environ.get("SQUALL_TEST_OPAQUE") == "1"
FLAKES = os.environ.get("SQUALL_TEST_NO_FLAKES") != "1"
KIND = "opaque" if OPAQUE else "transactional"


class FlakySplit(Bolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def get_component_configuration(self) -> dict[str, Any]:
        return {"topology.tick.tuple.freq.secs": 0.05}

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.held: list[tuple[float, Tuple]] = []
        self.rng = random.Random()

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        if tuple.is_tick:
            now = time.monotonic()
            due = [t for at, t in self.held if at <= now]
            self.held = [(at, t) for at, t in self.held if at > now]
            for t in due:
                self.collector.ack(t)
            return
        line = tuple[0]
        ws = WORD.findall(line.lower())
        first = tuple.batch is not None and tuple.batch[1] == 1
        fail = first and ((FLAKES and zlib.crc32(line.encode()) % 10 == 0) or (OPAQUE and tuple.batch is not None and tuple.batch[0] == 2))
        for i, w in enumerate(ws):
            if fail and i >= len(ws) // 2:
                break
            self.collector.emit([w], anchors=tuple)
        if fail:
            self.collector.fail(tuple)
        elif FLAKES and self.rng.random() < 0.33:
            self.held.append((time.monotonic() + self.rng.uniform(0.0, 0.3), tuple))  # a delayed ack
        else:
            self.collector.ack(tuple)


class CountCommitter(BatchBolt, Committer):
    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, attempt: Any) -> None:
        super().prepare(conf, context, collector, attempt)
        self.counts: Counter[str] = Counter()
        self.state = context.state("counts", KIND)

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        self.counts[tuple[0]] += 1

    def finish_batch(self) -> None:
        self.state.apply(self.attempt.txid, self.counts.items())


class PartialFirstAttempt(OpaqueKafkaSpout):
    """Batch 2's first attempt leaves partition 1 out (its replay takes it)."""

    def cut(self, txid: int, attempt: int, proposed: dict[TP, Range]) -> dict[TP, Range]:
        if txid == 2 and attempt == 1:
            return {tp: r for tp, r in proposed.items() if tp[1] != 1}
        return proposed


def topology() -> Topology:
    b = TopologyBuilder()
    spout = PartialFirstAttempt if OPAQUE else TransactionalKafkaSpout
    b.set_spout("lines", spout(RecordTranslator("line"), partitions=2))
    b.set_bolt("split", FlakySplit(), 2).shuffle_grouping("lines")
    b.set_bolt("count", CountCommitter(), 2, num_tasks=4).fields_grouping("split", ["word"])
    b.set_state_output("counts", kind=KIND)
    conf = {"topology.workers": 3, "topology.message.timeout.secs": 10, "squall.batch.records": 500}
    return b.create_topology("eo", conf)
