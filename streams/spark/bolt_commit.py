"""The driver's side of a SparkBolt: each micro-batch's tail rows -> state, acks, stats, offsets.

A SparkBolt's query ends in ``foreachBatch(BoltBatchCommit(...))``, which Spark calls in the
driver (the Squall worker running :class:`streams.spark.runtime.SparkBoltExecutor`) once per
micro-batch. Its tasks (:class:`streams.spark.bolt.BoltProcessor`) have produced their
outputs to Kafka and flushed them; each returns one batch of tail rows (``OUT_SCHEMA``):

* kind 1 / 2 -- ack ``(root, val)``, XOR-coalesced in the task / fail ``root``;
* kind 3 -- the task's counters and the next offset of each input partition it read;
* kind 4 -- a committer's ``(key, delta)``.

So a tree is acked only after the batch's outputs (and state) are durable, and no output
passes through Spark's JVM or a sink's Python worker.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import TopicPartition

from streams.monitoring.stats import ExecutorStats, LogHistogram
from streams.runtime.acks import AckBuffer
from streams.spark import clients
from streams.spark.bolt import KIND_ACK, KIND_FAIL, KIND_STATE, KIND_STATS, BoltProcessor, to_unsigned
from streams.spark.exceptions import SparkSinkError
from streams.spark.sink import Delivery
from streams.wire.codec import encode_json
from streams.wire.naming import acker_topic, component_group, component_topic, metrics_topic

log = logging.getLogger("squall.spark.bolt_commit")


@dataclass
class BoltCommit:
    """A micro-batch's tail rows, folded across its tasks.

    ``acks``: root -> XOR of the vals (Storm Acker: XOR of edge ids); ``fails``: root ->
    why (``""``: not said), a fail anywhere wins over acks for that root; ``state``: a
    committer's JSON key -> deltas; ``stats``: each task's counters; ``records`` and
    ``lost``: Kafka records the tasks produced, and of those, lost.
    """

    acks: dict[int, int] = field(default_factory=dict)
    fails: dict[int, str] = field(default_factory=dict)
    state: dict[str, list[Any]] = field(default_factory=dict)
    stats: list[dict[str, Any]] = field(default_factory=list)
    records: int = 0
    lost: int = 0


def fold_tails(batches: Iterable[Any]) -> BoltCommit:
    """Fold the tail rows (pyarrow RecordBatches of ``OUT_SCHEMA``) of every task of a micro-batch."""
    out = BoltCommit()
    acks = out.acks
    for batch in batches:
        cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
        for kind, key, value, root, val in zip(cols["kind"], cols["key"], cols["value"], cols["root"], cols["val"], strict=True):
            if kind == KIND_ACK:
                r = to_unsigned(root)
                acks[r] = acks.get(r, 0) ^ to_unsigned(val)
            elif kind == KIND_FAIL:
                r = to_unsigned(root)
                if value or r not in out.fails:
                    out.fails[r] = value.decode() if value else ""
            elif kind == KIND_STATS:
                task = json.loads(value)
                out.stats.append(task)
                out.records += task.get("records", 0)
                out.lost += task.get("lost", 0)
            elif kind == KIND_STATE:
                out.state.setdefault(key.decode(), []).append(json.loads(value))
    for r in out.fails:
        acks.pop(r, None)
    return out


class BoltBatchCommit:
    """``foreachBatch`` function of a SparkBolt's query (see the module doc).

    ``processor``: the query's :class:`~streams.spark.bolt.BoltProcessor`, whose bolt,
    topology (a committer's state) and producer settings (the acker ops, with its
    ``flush_timeout_s``) the driver shares. ``ackers``: partitions of ``__acker`` (0: no
    tracking); ``worker``: the driver's worker name, for stats. Raises
    :class:`SparkSinkError` when the acker ops cannot be delivered (the query stops; the
    batch re-runs from the checkpoint).
    """

    def __init__(self, processor: BoltProcessor, *, ackers: int, worker: str) -> None:
        self.processor = processor
        self.component = processor.component
        self.topology = processor.name
        self.ackers = ackers
        self.worker = worker

    def __call__(self, frame: Any, batch_id: int) -> None:
        """Commit micro-batch ``batch_id``, whose tail rows are the DataFrame ``frame``.

        1. Collect the tail rows. This runs the micro-batch's tasks, each of which has
           flushed its outputs before it returns.
        2. Fold them (:func:`fold_tails`).
        3. Apply a committer's state at txid = ``batch_id`` (a re-run batch's write is
           skipped: Trident's ``(txid, value)``).
        4. Send one coalesced op per root to ``squall.T.__acker`` and wait for it.
        5. Publish the batch's stats, then commit the input offsets it covered to the bolt's
           group ``squall.T.<bolt>`` (for lag dashboards; Spark's checkpoint stays the truth).
        """
        started = time.time()
        # steps 1 and 2
        merged = fold_tails(frame.toArrow().to_batches())
        # step 3
        applied = None
        if merged.state:
            committer = self.processor.state().committer
            if committer is None:
                raise SparkSinkError(f"[{self.component}] state rows from a bolt that has no committer")
            folded = {k: _fold(committer.combine, v) for k, v in merged.state.items()}
            applied = committer.commit(batch_id, folded)
            log.info("[%s] batch %d state: %d keys written, %d skipped", self.component, batch_id, applied.written, applied.skipped)
        # step 4
        delivery = Delivery(self.processor.producer_conf, self.component, self.processor.flush_timeout_s)
        ops = 0
        if self.ackers > 0 and (merged.acks or merged.fails):
            buf = AckBuffer(acker_topic(self.topology), self.ackers)
            buf.acks = merged.acks
            buf.fails = merged.fails
            ops = buf.flush(delivery.produce)
        # step 5
        delivery.produce(metrics_topic(self.topology), encode_json(self._stats(merged, batch_id, ops, applied)), key=self.component.encode())
        if not delivery.finish():
            raise SparkSinkError(f"[{self.component}] batch {batch_id}: acker ops could not be delivered; the batch will be re-run")
        self._commit_offsets(merged, batch_id)
        log.debug("[%s] batch %d committed in %.3f s: %d records, %d acker ops", self.component, batch_id, time.time() - started, merged.records, ops)

    def _commit_offsets(self, merged: BoltCommit, batch_id: int) -> None:
        nxt: dict[int, int] = {}
        for task in merged.stats:
            for p, o in task.get("next_offsets", {}).items():
                nxt[int(p)] = max(nxt.get(int(p), 0), o)
        if not nxt:
            return
        topic = component_topic(self.topology, self.component)
        conf = {"bootstrap.servers": self.processor.producer_conf["bootstrap.servers"], "group.id": component_group(self.topology, self.component)}
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
