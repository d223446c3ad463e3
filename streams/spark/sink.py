"""``df.writeStream.format("squall-kafka")``: a Kafka sink for PySpark over confluent-kafka.

Input columns: ``value`` (binary or string, required); ``key`` (binary or string),
``topic`` (string; else the ``topic`` option) and ``partition`` (int; null or -1 lets the
partitioner choose) are optional. Each write task produces its rows, then waits for
every delivery (``flushTimeoutSecs``) before it reports success, so a committed
micro-batch is durable in Kafka. A crash mid-batch re-runs the batch after restart:
the sink is at-least-once (Kafka transactions cannot help on the embedded broker, whose
read_committed readers still see aborted records).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from typing_extensions import override

from streams.kafka.clients import produce_fn
from streams.spark import clients
from streams.spark import options as opt
from streams.spark.exceptions import SparkSinkError

if TYPE_CHECKING:  # only Spark's data workers write rows; its planning workers load this module too (see streams.spark.datasource)
    import pyarrow as pa

log = logging.getLogger("squall.spark.sink")


@dataclass
class SinkCommit(WriterCommitMessage):
    """What one write task delivered: ``records`` (count)."""

    records: int


def _bytes(v: Any) -> bytes | None:
    if v is None or isinstance(v, bytes):
        return v
    return str(v).encode()


class Delivery:
    """One task's producer session: produce, then :meth:`finish` (flush + check).

    Used by the ``squall-kafka`` sink's write tasks and by a SparkBolt's tasks
    (:class:`streams.spark.bolt.Outlet`).
    """

    def __init__(self, conf: Mapping[str, Any], where: str, flush_timeout_s: float) -> None:
        self.where = where
        self.producer, self.tracker = clients.producer(conf, where)
        self.produce = produce_fn(self.producer)
        self.failures_before = self.tracker.failures
        self.flush_timeout_s = flush_timeout_s
        self.records = 0

    def finish(self) -> bool:
        """Wait for every delivery.

        True if all were delivered; raises SparkSinkError if the flush timed out (records
        may still be queued).
        """
        left = self.producer.flush(self.flush_timeout_s)
        if left:
            raise SparkSinkError(f"[{self.where}] {left} records still undelivered after {self.flush_timeout_s} s")
        return self.tracker.failures == self.failures_before

    def lost(self) -> int:
        """Records the broker did not take since this session began."""
        return self.tracker.failures - self.failures_before


def produce_batch(delivery: Delivery, batch: pa.RecordBatch, default_topic: str | None) -> None:
    """Produce one Arrow batch of (value[, key, topic, partition]) rows."""
    names = batch.schema.names
    if "value" not in names:
        raise SparkSinkError(f"[{delivery.where}] the sink needs a value column (got {names})")
    values = batch.column("value").to_pylist()
    n = len(values)
    keys = batch.column("key").to_pylist() if "key" in names else [None] * n
    topics = batch.column("topic").to_pylist() if "topic" in names else [None] * n
    parts = batch.column("partition").to_pylist() if "partition" in names else [None] * n
    produce = delivery.produce
    for value, key, topic, part in zip(values, keys, topics, parts, strict=True):
        topic = topic or default_topic
        if not topic:
            raise SparkSinkError(f"[{delivery.where}] a row has no topic and no topic option is set")
        produce(topic, _bytes(value), _bytes(key), -1 if part is None else int(part))
    delivery.records += n


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """Spark's side of the sink (see the module doc)."""

    where = "squall-kafka"

    def __init__(self, options: Mapping[str, str]) -> None:
        self.producer_conf = opt.kafka_settings(options, opt.SINK_DEFAULTS, self.where)
        self.topic = opt.text(options, "topic")
        self.flush_timeout_s = opt.number(options, "flushTimeoutSecs", 60.0, self.where) or 60.0

    @override
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        delivery = Delivery(self.producer_conf, self.where, self.flush_timeout_s)
        for batch in iterator:
            produce_batch(delivery, batch, self.topic)
        if not delivery.finish():
            raise SparkSinkError(f"[{self.where}] {delivery.tracker.failures - delivery.failures_before} deliveries failed; the batch will be retried")
        return SinkCommit(delivery.records)

    @override
    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        n = sum(m.records for m in messages if isinstance(m, SinkCommit))
        log.debug("[%s] batch %d committed: %d records", self.where, batchId, n)
