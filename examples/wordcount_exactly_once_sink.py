"""The exactly-once word count, writing each batch's counts to a Kafka topic exactly once (Apache Kafka only).

``lines`` (TransactionalKafkaSpout) -> ``split`` (shuffle) -> ``count`` (fields on "word"; a
committer that counts a batch's words and, at its commit, emits ``(word, count, txid)``) ->
``out`` (a :class:`~streams.KafkaSink`: each batch's records in one Kafka transaction, with
the txid). A ``read_committed`` reader of ``squall.<topology>.counts`` sees each batch's counts
once, whatever was replayed or killed, so summing them gives the exact counts.

    squall run examples/wordcount_exactly_once_sink.py --bootstrap-servers HOST:PORT [--input PATH] [--output counts.jsonl]

The embedded broker cannot run it (its read_committed shows aborted records): ``squall run``
says so and exits 2. Tokenisation is examples/wordcount.py's.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from streams import (
    BasicBolt,
    BasicOutputCollector,
    BatchBolt,
    Committer,
    FieldNameBasedTupleToKafkaMapper,
    KafkaSink,
    RecordTranslator,
    Topology,
    TopologyBuilder,
    TransactionalKafkaSpout,
    Tuple,
)

WORD = re.compile(r"[a-z']+")


class Split(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        for word in WORD.findall(tuple[0].lower()):
            collector.emit([word])


class BatchCounts(BatchBolt, Committer):
    """Counts one batch's words; at its commit, emits ``(word, count, txid)`` for each."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count", "txid"])

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, attempt: Any) -> None:
        super().prepare(conf, context, collector, attempt)
        self.counts: Counter[str] = Counter()

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        self.counts[tuple[0]] += 1

    def finish_batch(self) -> None:
        for word, n in self.counts.items():
            self.collector.emit([word, n, self.attempt.txid])


def topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=2))
    builder.set_bolt("split", Split(), 2).shuffle_grouping("lines")
    builder.set_bolt("count", BatchCounts(), 2, num_tasks=4).fields_grouping("split", ["word"])
    sink = KafkaSink("squall.{topology}.counts", FieldNameBasedTupleToKafkaMapper(key_field="word", message_field=None))
    builder.set_committer_bolt("out", sink, 1, num_tasks=2).fields_grouping("count", ["word"])
    return builder.create_topology("wordcount_eo_sink", {"topology.workers": 3, "topology.acker.executors": 1})
