"""Exactly-once word count: a transactional topology (seed 003) whose committer writes the
counts into txid-aware state.

``lines`` (TransactionalKafkaSpout: batches of up to ``squall.batch.records`` lines per
partition, each with a txid) -> ``split`` (shuffle; an ordinary BasicBolt) -> ``count``
(fields on "word"; a committer BatchBolt). Each count task counts its words per batch in
memory, and at the batch's commit (strictly in txid order) writes them into the
``counts`` state, a :class:`~streams.state.TransactionalState` ``word -> (txid, count)``
in SQLite by default (``squall.state.url``: PostgreSQL works too). A batch that fails or
times out is replayed under the same txid and re-reads the same lines; a commit that was
already written is skipped. So the counts are exact, whatever fails.

    squall run examples/wordcount_exactly_once.py [--input PATH] [--output counts.json]

One file, as ``squall submit`` needs: it imports nothing but ``streams``. Tokenisation is
examples/wordcount.py's: lowercase, then every match of ``[a-z']+``.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from streams import BasicBolt, BasicOutputCollector, BatchBolt, Committer, RecordTranslator, Topology, TopologyBuilder, TransactionalKafkaSpout, Tuple

WORD = re.compile(r"[a-z']+")


class Split(BasicBolt):
    """line -> its words (an ordinary bolt: its emits join the line's batch)."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        for word in WORD.findall(tuple[0].lower()):
            collector.emit([word])


class CountCommitter(BatchBolt, Committer):
    """Counts one batch's words; at the commit, adds them to the ``counts`` state."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, attempt: Any) -> None:
        super().prepare(conf, context, collector, attempt)
        self.counts: Counter[str] = Counter()
        self.state = context.state("counts", "transactional")

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        self.counts[tuple[0]] += 1

    def finish_batch(self) -> None:
        self.state.apply(self.attempt.txid, self.counts.items())


def topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=2))
    builder.set_bolt("split", Split(), 2).shuffle_grouping("lines")
    builder.set_bolt("count", CountCommitter(), 2, num_tasks=4).fields_grouping("split", ["word"])
    builder.set_state_output("counts", kind="transactional")
    return builder.create_topology("wordcount_eo", {"topology.workers": 3, "topology.acker.executors": 1})
