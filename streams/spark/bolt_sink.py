"""The ``squall-bolt`` sink: a SparkBolt's outputs to Kafka, its acks to the acker.

Rows come from :class:`streams.spark.bolt.BoltProcessor` (``OUT_SCHEMA``):

* kind 0 -- an output record: produced by the write task (tuples to subscribers' input
  topics, ``set_output`` records, dead letters);
* kind 1 / 2 -- ack ``(root, val)`` / fail ``root``: XOR-coalesced in the task and
  returned in the commit message, never sent from the task;
* kind 3 -- the task's counters and the next offset of each input partition it read;
  kind 4 -- a committer's ``(key, delta)``.

Each write task flushes its records and checks every delivery before it returns; if
any delivery failed, it turns its acks into fails (the trees are replayed, as a Python
bolt executor does). The driver's ``commit(messages, batch_id)`` then (1) applies a
committer's state at txid = ``batch_id``, (2) sends one coalesced op per root per
micro-batch to ``squall.T.__acker`` and waits for it, (3) publishes the batch's stats and
commits the input offsets it covered to the bolt's group ``squall.T.<bolt>`` (for lag
dashboards; Spark's checkpoint stays the source of truth). So a tree is acked only after
the batch's outputs (and state) are durable.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from confluent_kafka import TopicPartition
from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, DataSourceStreamWriter, WriterCommitMessage
from pyspark.sql.types import StructType
from typing_extensions import override

from streams.monitoring.stats import ExecutorStats, LogHistogram
from streams.runtime.acks import AckBuffer
from streams.spark import clients
from streams.spark import options as opt
from streams.spark.bolt import KIND_ACK, KIND_FAIL, KIND_RECORD, KIND_STATE, KIND_STATS, BoltProcessor, to_unsigned
from streams.spark.exceptions import SparkSinkError
from streams.spark.sink import Delivery
from streams.wire.acker import why_text
from streams.wire.codec import encode_json
from streams.wire.naming import acker_topic, component_group, component_topic, metrics_topic

if TYPE_CHECKING:  # only Spark's data workers write rows; its planning workers load this module too (see streams.spark.datasource)
    import pyarrow as pa

log = logging.getLogger("squall.spark.bolt_sink")


@dataclass
class BoltCommit(WriterCommitMessage):
    """One write task's result.

    Coalesced ``acks`` (root -> val), ``fails``, committer ``state`` (JSON key -> delta
    list), delivered ``records`` and task ``stats``.
    """

    acks: dict[int, int] = field(default_factory=dict)
    fails: dict[int, str] = field(default_factory=dict)
    """Roots to fail, each with why (``""``: not said)."""
    state: dict[str, list[Any]] = field(default_factory=dict)
    records: int = 0
    stats: list[dict[str, Any]] = field(default_factory=list)
    lost: int = 0


def write_bolt_rows(delivery: Delivery, batches: Iterator[pa.RecordBatch]) -> BoltCommit:
    """Produce kind-0 rows and gather the rest into a :class:`BoltCommit` (no flush)."""
    out = BoltCommit()
    acks = out.acks
    produce = delivery.produce
    for batch in batches:
        cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
        for kind, topic, part, key, value, headers, root, val in zip(
            cols["kind"], cols["topic"], cols["partition"], cols["key"], cols["value"], cols["headers"], cols["root"], cols["val"], strict=True
        ):
            if kind == KIND_RECORD:
                hdrs = [(k, v.encode()) for k, v in json.loads(headers)] if headers else None
                produce(topic, value, key, -1 if part is None else part, hdrs)
                out.records += 1
            elif kind == KIND_ACK:
                r = to_unsigned(root)
                acks[r] = acks.get(r, 0) ^ to_unsigned(val)
            elif kind == KIND_FAIL:
                r = to_unsigned(root)
                if value or r not in out.fails:
                    out.fails[r] = value.decode() if value else ""
            elif kind == KIND_STATS:
                out.stats.append(json.loads(value))
            elif kind == KIND_STATE:
                out.state.setdefault(key.decode(), []).append(json.loads(value))
    for r in out.fails:
        acks.pop(r, None)
    return out


def merge_commits(messages: list[WriterCommitMessage | None]) -> BoltCommit:
    """XOR acks per root across tasks; a fail anywhere wins over acks for that root."""
    merged = BoltCommit()
    for m in messages:
        if not isinstance(m, BoltCommit):
            continue
        for r, v in m.acks.items():
            merged.acks[r] = merged.acks.get(r, 0) ^ v
        for r, why in m.fails.items():
            if why or r not in merged.fails:
                merged.fails[r] = why
        for k, deltas in m.state.items():
            merged.state.setdefault(k, []).extend(deltas)
        merged.records += m.records
        merged.lost += m.lost
        merged.stats += m.stats
    for r in merged.fails:
        merged.acks.pop(r, None)
    return merged


class BoltStreamWriter(DataSourceStreamArrowWriter):
    """Spark's side of the ``squall-bolt`` sink (see the module doc)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        raw = opt.text(options, "squall.plan")
        if not raw:
            raise SparkSinkError("the squall-bolt sink needs option squall.plan (a BoltSinkPlan; SparkBolt's driver sets it)")
        plan = opt.BoltSinkPlan.model_validate_json(raw)
        self.plan = plan
        self.component = plan.component
        self.topology = plan.name
        self.ackers = plan.ackers
        self.worker = plan.worker
        self.where = self.component
        self.producer_conf = opt.kafka_settings(options, opt.SINK_DEFAULTS, self.where)
        self.flush_timeout_s = opt.number(options, "flushTimeoutSecs", 60.0, self.where) or 60.0

    @override
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        delivery = Delivery(self.producer_conf, self.where, self.flush_timeout_s)
        out = write_bolt_rows(delivery, iterator)
        if not delivery.finish():
            out.lost = delivery.tracker.failures - delivery.failures_before
            log.error("[%s] %d outputs lost in this batch: failing %d trees instead of acking", self.component, out.lost, len(out.acks))
            why = why_text(self.component, "outputs lost (the broker did not take them)")
            for r in out.acks:
                out.fails.setdefault(r, why)
            out.acks.clear()
        return out

    @override
    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        merged = merge_commits(messages)
        started = time.time()
        applied = None
        if merged.state:
            committer = BoltProcessor(self.plan.topology_file, self.topology, self.plan.overrides, self.plan.service_conf, self.component)
            committer_obj = committer.state().committer
            if committer_obj is None:
                raise SparkSinkError(f"[{self.component}] state rows from a bolt that has no committer")
            folded = {k: _fold(committer_obj.combine, v) for k, v in merged.state.items()}
            applied = committer_obj.commit(batchId, folded)
            log.info("[%s] batch %d state: %d keys written, %d skipped", self.component, batchId, applied.written, applied.skipped)
        delivery = Delivery(self.producer_conf, self.where, self.flush_timeout_s)
        ops = 0
        if self.ackers > 0 and (merged.acks or merged.fails):
            buf = AckBuffer(acker_topic(self.topology), self.ackers)
            buf.acks = merged.acks
            buf.fails = merged.fails
            ops = buf.flush(delivery.produce)
        delivery.produce(metrics_topic(self.topology), encode_json(self._stats(merged, batchId, ops, applied)), key=self.component.encode())
        if not delivery.finish():
            raise SparkSinkError(f"[{self.component}] batch {batchId}: acker ops could not be delivered; the batch will be re-run")
        self._commit_offsets(merged, batchId)
        log.debug("[%s] batch %d committed in %.3f s: %d records, %d acker ops", self.component, batchId, time.time() - started, merged.records, ops)

    def _commit_offsets(self, merged: BoltCommit, batch_id: int) -> None:
        nxt: dict[int, int] = {}
        for task in merged.stats:
            for p, o in task.get("next_offsets", {}).items():
                nxt[int(p)] = max(nxt.get(int(p), 0), o)
        if not nxt:
            return
        topic = component_topic(self.topology, self.component)
        conf = {"bootstrap.servers": self.producer_conf["bootstrap.servers"], "group.id": component_group(self.topology, self.component)}
        try:
            clients.consumer(conf).commit(offsets=[TopicPartition(topic, p, o) for p, o in nxt.items()], asynchronous=False)
        except Exception as exc:  # lag dashboards only: never fail the batch for it
            log.warning("[%s] batch %d: committing offsets %s failed: %s", self.component, batch_id, nxt, exc)

    def _stats(self, merged: BoltCommit, batch_id: int, ops: int, applied: Any) -> dict[str, Any]:
        """A per-batch stats snapshot (its own instance, so the board sums batches)."""
        s = ExecutorStats(self.topology, self.component, "bolt", self.worker)
        s.instance = f"{self.component}-b{batch_id}-{uuid.uuid4().hex[:6]}"
        hist = s.hist("execute_latency")
        for task in merged.stats:
            for name in ("executed", "failed", "errors", "poison", "emitted"):
                s.inc(name, task.get(name, 0))
            hist.merge(LogHistogram.from_json(task.get("execute_latency", {})))
        s.inc("acked", max(0, s.counters.get("executed", 0) - s.counters.get("failed", 0)))
        s.inc("acker_ops", ops)
        s.inc("records_out", merged.records)
        s.inc("lost_outputs", merged.lost)
        s.gauges["spark_batch_id"] = batch_id
        if applied is not None:
            s.inc("state_keys_written", applied.written)
            s.inc("state_keys_skipped", applied.skipped)
        return s.snapshot(final=True)


def _fold(combine: Any, deltas: list[Any]) -> Any:
    acc = deltas[0]
    for d in deltas[1:]:
        acc = combine(acc, d)
    return acc


class SquallBoltDataSource(DataSource):
    """``format("squall-bolt")``: the sink of a SparkBolt query (internal)."""

    @override
    @classmethod
    def name(cls) -> str:
        return "squall-bolt"

    @override
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return BoltStreamWriter(self.options)
