"""KafkaSink: a committer that writes each batch's tuples to a Kafka topic exactly once (issue 30).

A transactional topology's committer bolt (:class:`~streams.model.batch.Committer`): in the
processing phase it maps each of the batch's tuples to a record (a
:class:`~streams.kafka.bolt.TupleToKafkaMapper`, serializers as the KafkaBolt's); at the
batch's commit, in txid order, it writes them in **one Kafka transaction**, together with the
txid, committed as the offset of consumer group ``squall.T.<sink>.sink`` on partition ``<task>``
of ``squall.T.<sink>.txids`` (Kafka Streams' exactly-once v2 keeps its input offsets that way;
here the "offset" is the last txid written). A replayed txid at or below it writes nothing.

One transactional id per committer task, ``squall.T.<sink>.sink.<task>``: a task that starts
calls ``init_transactions``, which aborts a transaction its previous life left open and fences
that life (a zombie's next commit fails with a fatal error and its worker restarts). Readers
use ``isolation.level=read_committed`` (librdkafka's default): they see each batch's records
once, whole or not at all.

The embedded broker's ``read_committed`` returns aborted records, so this sink refuses it (a
:class:`~streams.exceptions.TopologyError` at submit naming the component); on it, write from
a KafkaBolt (at least once) instead. docs/design.md ("An exactly-once Kafka sink") says why
transactions and not txid headers deduplicated by readers.

Example (examples/wordcount_exactly_once_sink.py writes each batch's word counts)::

    >>> sink = KafkaSink("squall.{topology}.counts", FieldNameBasedTupleToKafkaMapper("word", None))
    >>> sink.sink_topic("wc"), sorted(sink.own_topics("wc", "out", 4).items())
    ('squall.wc.counts', [('squall.wc.counts', 1), ('squall.wc.out.txids', 4)])
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from typing_extensions import override

from streams.config import TopologyConfig
from streams.exceptions import FailedException, FatalError, TopologyError
from streams.kafka.bolt import FieldNameBasedTupleToKafkaMapper, Headers, TupleToKafkaMapper, check_serializers, serialize, tuple_bytes
from streams.kafka.clients import new_consumer, new_producer
from streams.model.batch import BatchAttempt, BatchBolt, BatchOutputCollector, Committer
from streams.model.component import OutputFieldsDeclarer
from streams.model.context import TopologyContext
from streams.model.tuple import Tuple
from streams.wire.codec import exact

log = logging.getLogger("squall.kafka_sink")

Record = tuple[bytes | None, bytes | None, Headers | None]


def txid_topic(topology: str, component: str) -> str:
    """The (empty) topic whose offsets hold each sink task's last txid: ``squall.T.<sink>.txids``."""
    return f"squall.{topology}.{component}.txids"


class TransactionalWriter:
    """One sink task's Kafka side: a transactional producer and the last txid it committed.

    Steps of :meth:`commit` (txid ``N``):

    1. ``N`` at or below the last txid committed: a replay, write nothing;
    2. begin a transaction, produce the batch's records;
    3. add the txid to the transaction (offset ``N`` of the sink's group on the task's partition of the txids topic);
    4. commit the transaction: the records and the txid become visible together.

    Raises FailedException when the transaction could not commit (it is aborted; the batch
    replays) and FatalError when this producer was fenced by a newer life of the task.

    Args:
      bootstrap, kafka: the topology's Kafka and client overrides (``{"producer": ..., "consumer": ...}``).
      topic: where the records go; txids: the txids topic; partition: the task's partition there.
      group: the consumer group that holds the txids; transactional_id: the task's.
      component: for errors and log lines.
    """

    def __init__(
        self,
        bootstrap: str,
        kafka: Mapping[str, Any],
        topic: str,
        txids: str,
        partition: int,
        group: str,
        transactional_id: str,
        component: str,
        producer_config: Mapping[str, Any] | None = None,
    ) -> None:
        self.topic = topic
        self.txids = txids
        self.partition = partition
        self.component = component
        self.transactional_id = transactional_id
        self.producer: Producer = new_producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": transactional_id,
                "transaction.timeout.ms": 60_000,
                "linger.ms": 5,
                "log_level": 3,
                **kafka.get("producer", {}),
                **(producer_config or {}),
            }
        )
        self.consumer: Consumer = new_consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "log_level": 0,
                **kafka.get("consumer", {}),
            }
        )
        self._guard(lambda: self.producer.init_transactions(30), "init_transactions")
        self.last_txid = self._committed_txid()
        """The last txid whose records this task committed (0: none)."""
        self.written = 0
        self.skipped = 0
        log.info("[%s] transactional id %s ready; last txid written %d", component, transactional_id, self.last_txid)

    def _committed_txid(self) -> int:
        try:
            got = self.consumer.committed([TopicPartition(self.txids, self.partition)], timeout=30)
        except KafkaException as exc:
            raise FatalError(f"[{self.component}] cannot read the last txid written from {self.txids}[{self.partition}]: {exc}") from exc
        offset = got[0].offset if got else -1
        return max(0, offset)

    def _guard(self, call: Any, what: str) -> Any:
        """Run a producer call; a fenced or fatal error is FatalError, anything else FailedException (the batch replays)."""
        try:
            return call()
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if err.fatal() or err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH):
                raise FatalError(
                    f"[{self.component}] transactional id {self.transactional_id} {what}: {err.str()} (fenced by a newer life of this task?)"
                ) from exc
            if what != "init_transactions" and err.txn_requires_abort():
                self._abort()
            raise FailedException(f"[{self.component}] {what} failed: {err.str()}") from exc

    def _abort(self) -> None:
        try:
            self.producer.abort_transaction(30)
        except KafkaException as exc:
            log.warning("[%s] abort_transaction: %s", self.component, exc)

    def commit(self, txid: int, records: list[Record]) -> bool:
        """Write ``records`` as txid ``txid``, once (see the class docstring); False if it was written before."""
        # 1. A replay of a txid this task committed already.
        if txid <= self.last_txid:
            self.skipped += 1
            log.info("[%s] txid %d was written before (last %d): skipped", self.component, txid, self.last_txid)
            return False
        # 2. The batch's records, in a transaction.
        self._guard(self.producer.begin_transaction, "begin_transaction")
        try:
            for key, value, headers in records:
                self._produce(key, value, headers)
            # 3. The txid, as this task's offset in the sink's group.
            meta = self.consumer.consumer_group_metadata()
            self._guard(
                lambda: self.producer.send_offsets_to_transaction([TopicPartition(self.txids, self.partition, txid)], meta, 30), "send_offsets_to_transaction"
            )
        except FailedException:
            raise
        except Exception:
            self._abort()
            raise
        # 4. All of it becomes visible at once.
        self._guard(lambda: self.producer.commit_transaction(60), "commit_transaction")
        self.last_txid = txid
        self.written += len(records)
        return True

    def _produce(self, key: bytes | None, value: bytes | None, headers: Headers | None) -> None:
        while True:
            try:
                self.producer.produce(self.topic, value, key, headers=list(headers) if headers else None)
                return
            except BufferError:
                self.producer.poll(0.1)

    def close(self) -> None:
        """Close the consumer (the producer has nothing pending outside a transaction)."""
        self.consumer.close()


class KafkaSink(BatchBolt, Committer):
    """Writes each batch's tuples to ``topic`` exactly once (see the module docstring).

    Args:
      topic: the topic (``{topology}`` becomes the topology's name); Squall creates it at submit.
      mapper: key, value and headers of a tuple (default: fields ``key`` and ``message``).
      key_serializer, value_serializer: ``"str"``, ``"bytes"`` or ``"json"`` (defaults ``str`` and ``json``).
      producer_config: librdkafka settings over the transactional producer's.
    """

    needs_real_kafka = "a KafkaSink writes each batch in a Kafka transaction"

    def __init__(
        self,
        topic: str,
        mapper: TupleToKafkaMapper | None = None,
        *,
        key_serializer: str = "str",
        value_serializer: str = "json",
        producer_config: dict[str, Any] | None = None,
    ) -> None:
        self.topic = topic
        self.mapper: TupleToKafkaMapper = mapper or FieldNameBasedTupleToKafkaMapper()
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
        self.producer_config = dict(producer_config or {})
        self.records: list[Record] = []
        self.writer: TransactionalWriter | None = None
        self.poisoned: dict[int, set[bytes]] = {}

    # -- topology time -----------------------------------------------------------------------------
    @override
    def validate(self, component_id: str) -> None:
        check_serializers(component_id, "KafkaSink", self.key_serializer, self.value_serializer)

    @override
    def validate_conf(self, component_id: str, conf: TopologyConfig) -> None:
        if conf.broker_embedded:
            raise TopologyError(
                f"[{component_id}] KafkaSink writes exactly once with Kafka transactions, and the embedded broker's "
                "read_committed shows aborted records: run it on Apache Kafka (--bootstrap-servers), or write with a "
                "KafkaBolt (at least once)"
            )

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        pass  # a sink: it emits nothing

    @override
    def sink_topic(self, topology: str) -> str | None:
        return self.topic.replace("{topology}", topology)

    @override
    def own_topics(self, topology: str, component: str, tasks: int) -> dict[str, int]:
        return {self.topic.replace("{topology}", topology): 1, txid_topic(topology, component): tasks}

    # -- run time: one copy per batch --------------------------------------------------------------
    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: BatchOutputCollector, attempt: BatchAttempt) -> None:
        super().prepare(conf, context, collector, attempt)
        self.records = []
        key = f"kafka-sink:{context.this_component_id}:{context.this_task_index}"
        # txid -> the bytes of the tuples dead-lettered in this task's uncommitted batches, shared
        # by the task's copies (one per batch): a replay does not dead-letter them again.
        self.poisoned = context.io.shared.setdefault(f"{key}:poisoned", {})
        writer = context.io.shared.get(key)
        if writer is None:
            name, me, index = context.topology.name, context.this_component_id, context.this_task_index
            writer = context.io.shared[key] = TransactionalWriter(
                context.io.bootstrap,
                context.io.kafka,
                self.topic.replace("{topology}", name),
                txid_topic(name, me),
                index,
                f"squall.{name}.{me}.sink",
                f"squall.{name}.{me}.sink.{index}",
                me,
                self.producer_config,
            )
            context.register_metric("kafka_sink_records", lambda: float(writer.written))
            context.register_metric("kafka_sink_replays_skipped", lambda: float(writer.skipped))
        self.writer = writer

    @override
    def execute(self, tuple: Tuple) -> None:
        try:
            key = serialize(self.mapper.key(tuple), self.key_serializer)
            value = serialize(self.mapper.message(tuple), self.value_serializer)
            headers = self.mapper.headers(tuple)
        except Exception as exc:  # the user's mapper, or a value that does not serialize
            raw = tuple_bytes(tuple.values)
            reason = f"KafkaSink cannot write the tuple: {type(exc).__name__}: {exc}"
            letters = self.context.io.dead_letters
            if letters is None:
                raise FatalError(f"[{self.context.this_component_id}] {reason}") from exc
            seen = self.poisoned.setdefault(self.attempt.txid, set())
            if raw not in seen:  # a replayed batch carries it again: one dead letter is enough
                seen.add(raw)
                letters.dead_letter_raw(raw, None, reason, topic=tuple.topic, partition=tuple.partition, offset=tuple.offset, attempts=0)
            return
        self.records.append((key, None if value is None else exact(value), headers))  # kept until the batch commits

    @override
    def finish_batch(self) -> None:
        assert self.writer is not None
        self.writer.commit(self.attempt.txid, self.records)
        for txid in [t for t in self.poisoned if t <= self.attempt.txid]:  # committed: never replayed again
            del self.poisoned[txid]
