"""The native acker runtime (the default): a confluent-kafka batch loop.

One :class:`acker.durable.DurableLedger` per acker task it owns (a fixed partition of
``__acker``, :mod:`service.control.scheduling`).
Per batch: apply ops. Per flush (``squall.flush.interval.secs``), in this order:
ack results -> wait for the broker -> changelog records -> wait -> commit input offsets
below the first op of every tree not yet in the changelog -> done-record tombstones (see
:mod:`acker.durable` for why; trees younger than ``squall.acker.persist.after.secs`` are
not written). At start each task's table
is restored from ``squall.T.__acker.changelog`` read to its true end (the high watermark
of a Fetch response; ListOffsets under-reports on the embedded broker).

Ledger clock: wall time (``time.time``), so start times survive a restore.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Message, TopicPartition

from acker.common import publish_ledger_stats, record_outcomes, record_resets, restored_ledger
from acker.durable import DurableLedger
from acker.ledger import Outcome
from streams.exceptions import DecodeError, FatalError
from streams.kafka.clients import committed_with_metadata, consumer_config, flush_patiently, new_consumer, recommit, reopen_consumer, transit_s
from streams.kafka.commit_watch import CommitWatch
from streams.kafka.fetch_gaps import FetchGaps
from streams.monitoring.bolt_progress import encode_progress, progress_key
from streams.monitoring.progress_store import read_progress
from streams.monitoring.trace import ACKER_OUTCOMES
from streams.runtime.executor import Every, Executor, ExecutorEnv
from streams.runtime.fencing import FENCE_LOG_LIMIT, EpochFence
from streams.wire.acker import OP_ACK, OP_INIT, chunks, decode_ops, encode_results, read_from, root_key
from streams.wire.commits import commit_metadata, resume_at
from streams.wire.naming import ACKER_COMPONENT, ack_result_topic, acker_changelog_topic, acker_topic, component_group, progress_topic

TRACED_OPS = {OP_INIT: "init", OP_ACK: "acker_ack"}
"""Acker ops traced for a sampled tree (a fail op is traced by its outcome, ``acker_fail``)."""

log = logging.getLogger("squall.acker")

EXPIRY_CHECK_SECS = 0.1
"""How often the RotatingMap is asked to rotate (it rotates every timeout / (buckets - 1))."""


class AckerExecutor(Executor):
    """Runs acker tasks (fixed partitions of ``squall.T.__acker``) with the native runtime."""

    kind = "acker"

    def __init__(self, env: ExecutorEnv) -> None:
        super().__init__(env)
        name = self.topology.name
        self.topic = acker_topic(name)
        self.changelog = acker_changelog_topic(name)
        self.result_topic = ack_result_topic(name)
        self.ledgers: dict[int, DurableLedger] = {}
        self.next_offset: dict[int, int] = {}
        self.committed: dict[int, int] = {}
        self.results: dict[int, list[list[Any]]] = {}
        self._transit = self.stats.hist("transit_latency")
        self.commit_watch = CommitWatch(ACKER_COMPONENT, self.conf.consumer_reopen_after_secs)
        """Commits failing this long mean a consumer that lost its coordinator: replaced (streams.kafka.commit_watch)."""
        self.reopen_due = False
        self.fence = EpochFence()
        """Drops acker records an older owner of their sender flushed late (:mod:`streams.runtime.fencing`)."""
        self.commit_meta = commit_metadata(self.epoch)
        """Every input commit names this life's epoch; each confirmed one goes to ``squall.T.__progress`` (:mod:`streams.wire.commits`)."""
        self.progress_due: set[int] = set()
        self._fence_logged = 0
        """Fenced records logged so far (one line each, the first :data:`~streams.runtime.fencing.FENCE_LOG_LIMIT`)."""
        self._stale_progress: list[bytes] = []
        """Progress keys of its tasks' older lives (:func:`~streams.monitoring.bolt_progress.newest_lives`), deleted after this life's first records."""

    # -- tasks -----------------------------------------------------------------------
    def _changelog_poison(self, msg: Message, exc: Exception) -> None:
        """A changelog record that does not decode (already counted): report it and dead-letter it."""
        self.errors.report("poison", msg.partition() or 0, exc=exc, where=f"{msg.topic()}[{msg.partition()}]@{msg.offset()}")
        self.dead_letter(msg, str(exc), 0)

    def _open_tasks(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Restore each task's table from the changelog before its ops are read."""
        for tp in partitions:
            self.ledgers[tp.partition] = restored_ledger(
                self.bootstrap,
                self.topology.name,
                self.conf,
                tp.partition,
                self.stats,
                on_poison=self._changelog_poison,
                persist_after_s=self.conf.acker_persist_after_secs,
            )
        # The group's committed offsets: done records below them are tombstoned at the next
        # flush, without waiting for new input (a restored table would otherwise keep them).
        # One that a replaced owner committed late, behind a newer life's, is passed over.
        last = read_progress(self.bootstrap, self.topology.name, ACKER_COMPONENT, self.kafka.get("consumer"))
        undo: list[TopicPartition] = []
        for p, committed in committed_with_metadata(consumer, [TopicPartition(self.topic, tp.partition) for tp in partitions], ACKER_COMPONENT).items():
            newer = last.get(p)
            start, undone = resume_at(ACKER_COMPONENT, f"{self.topic}[{p}]", committed, None if newer is None else (newer.epoch, newer.committed))
            if undone:
                self.stats.inc("fenced_commits")
                undo.append(TopicPartition(self.topic, p, start, metadata=self.commit_meta))
            self.committed[p] = self.next_offset[p] = start
            self.progress_due.add(p)
            if newer is not None and newer.fence:  # what the last life learned before this start holds (streams.runtime.fencing)
                self.fence.seed(p, newer.fence, start)
        recommit(consumer, undo, ACKER_COMPONENT)
        self._stale_progress = last.stale_of(ACKER_COMPONENT, set(self.ledgers))
        self._assigned()
        log.info("[%s] %s runs acker tasks %s", ACKER_COMPONENT, self.worker, sorted(self.ledgers))

    # -- processing ------------------------------------------------------------------
    def _apply(self, msg: Message) -> None:
        if msg.error():
            log.warning("[%s] consumer error: %s", ACKER_COMPONENT, msg.error())
            return
        p = msg.partition() or 0
        off = msg.offset() or 0
        dl = self.ledgers.get(p)
        if dl is None:
            return
        hop = transit_s(msg, time.time())
        if hop is not None:
            self._transit.record(hop)
        origin = read_from(msg.headers())
        if origin is not None and not self.fence.admit(p, origin[0], origin[1], off):
            self._fenced(msg, p, off, origin)
            self.next_offset[p] = off + 1
            return
        try:
            ops = decode_ops(msg.value(), component=ACKER_COMPONENT, topic=self.topic, partition=p, offset=off)
            outs = dl.apply(off, ops)
        except (DecodeError, ValueError, IndexError, TypeError) as exc:
            self.stats.inc("poison")
            self.errors.report("poison", p, exc=exc, where=f"{self.topic}[{p}]@{off}")
            self.dead_letter(msg, f"[{ACKER_COMPONENT}] bad acker record {self.topic}[{p}]@{off}: {exc}", 0)
            self.next_offset[p] = off + 1
            return
        counters = self.stats.counters
        counters["ops"] = counters.get("ops", 0) + len(ops)
        if self.tracer is not None:
            self._trace(p, ops, outs)
        record_outcomes(outs, self.stats, self.results)
        if dl.resets:
            record_resets(dl.take_resets(), self.results)
        self.next_offset[p] = off + 1

    def _fenced(self, msg: Message, p: int, off: int, origin: tuple[int, int]) -> None:
        """Drop an acker record that an older owner of its sender flushed after a newer one did (:mod:`streams.runtime.fencing`); count its ops."""
        try:
            n = len(decode_ops(msg.value(), component=ACKER_COMPONENT, topic=self.topic, partition=p, offset=off))
        except DecodeError:
            n = 0
        self.stats.inc("fenced_acker_ops", n)
        self.stats.inc("fenced_acker_records")
        sender, epoch = origin
        if self._fence_logged < FENCE_LOG_LIMIT:
            self._fence_logged += 1
            log.warning(
                "[%s] fenced %s[%d]@%d: %d ops from task %d in epoch %d, after its epoch %s (a replaced worker's late flush; dropped)",
                ACKER_COMPONENT,
                self.topic,
                p,
                off,
                n,
                sender,
                epoch,
                self.fence.highest_of(p, sender),
            )

    def _tick(self) -> None:
        for p, dl in self.ledgers.items():
            outs = dl.expire()
            if self.tracer is not None:
                self._trace(p, [], outs)
            record_outcomes(outs, self.stats, self.results)

    def _trace(self, task: int, ops: list[list[int]], outs: list[Outcome]) -> None:
        """The acker's events of sampled trees: an init or ack op arrived (with the XOR it carries), a tree ended."""
        tracer = self.tracer
        assert tracer is not None
        limit = tracer.limit  # the sample test first, inline: it is false for 99% of ops (hot path)
        for op in ops:
            if (op[1] >> 32) < limit and op[0] in TRACED_OPS:
                tracer.event(TRACED_OPS[op[0]], op[1], task, edge=op[2])
        for out in outs:
            if (out.root >> 32) < limit:
                event = ACKER_OUTCOMES.get(out.reason.value)
                if event is not None:
                    tracer.event(event, out.root, task)

    def _confirm(self, what: str) -> None:
        before = self.delivery.failures
        flush_patiently(self.producer, ACKER_COMPONENT, what)
        if self.delivery.failures != before:
            raise FatalError(f"[{ACKER_COMPONENT}] {what} not confirmed by the broker; stopping so that a restart replays")

    def _flush(self, consumer: Consumer, final: bool = False, commit: bool = True) -> None:
        """Send the ack results (confirmed), then the changelog (confirmed), then (``commit``) commit the input offsets and write what follows a commit.

        A flush because the input is drained sends the results at once, for latency, but commits
        only on the flush interval: a commit is a synchronous round trip and a write to the
        broker's offsets topic, and a drained acker at full speed flushed hundreds of times a
        second. Committing later only widens what a restart replays, which the changelog's tags
        already make safe (docs/design.md, "Acker crash safety"); the commit already lags the
        young trees by up to ``squall.acker.persist.after.secs``.
        """
        produce = self.produce
        if self.results:
            for task, results in self.results.items():
                for chunk in chunks(results):
                    produce(self.result_topic, encode_results(chunk), partition=task)
            self.results = {}
            self._confirm("ack results")
        wrote = False
        for p, dl in self.ledgers.items():
            for root, value in dl.changelog(final=final):
                produce(self.changelog, value, key=root_key(root), partition=p)
                wrote = True
        if wrote:
            self._confirm("changelog records")
        if not commit:
            self.producer.poll(0)
            return
        offsets = []
        for p, off in self.next_offset.items():
            owner = self.ledgers.get(p)
            safe = owner.commit_offset(off) if owner is not None else off
            if self.committed.get(p, -1) < safe:
                offsets.append(TopicPartition(self.topic, p, safe, metadata=self.commit_meta))
        if offsets and self.leased():  # a worker without its lease commits nothing (streams.runtime.lease)
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
                self.commit_watch.ok()
                for tp in offsets:
                    self.committed[tp.partition] = tp.offset
                    self.progress_due.add(tp.partition)
                self.purger.committed((tp.topic, tp.partition, tp.offset) for tp in offsets)
                self.purger.maybe_purge()
            except KafkaException as exc:
                log.warning("[%s] offset commit failed (will retry): %s", ACKER_COMPONENT, exc)
                self.reopen_due = self.commit_watch.failed(time.monotonic())
        for p, dl in self.ledgers.items():
            if p in self.committed:
                for root, value in dl.gc(self.committed[p]):
                    produce(self.changelog, value, key=root_key(root), partition=p)
        for p in sorted(self.progress_due):  # the confirmed commits (and where this life started): the next life starts past a late one
            off = self.committed[p]
            record = encode_progress(off, self.place, self.epoch, off, fence=self.fence.entries(p, off))
            produce(progress_topic(self.topology.name), record, key=progress_key(ACKER_COMPONENT, p, self.epoch))
        if self.progress_due and self._stale_progress:  # this life's records are out: its older lives' keys go
            for key in self._stale_progress:
                produce(progress_topic(self.topology.name), None, key=key)
            self._stale_progress = []
        self.progress_due.clear()
        self.producer.poll(0)

    def _reopen(self, consumer: Consumer, cfg: dict[str, Any], gaps: FetchGaps) -> Consumer:
        """A new consumer at the next op of every task, for one that lost its coordinator for good."""
        self.reopen_due = False
        positions = [TopicPartition(self.topic, p, self.next_offset.get(p, OFFSET_BEGINNING)) for p in sorted(self.ledgers)]
        return reopen_consumer(consumer, cfg, positions, ACKER_COMPONENT, gaps)

    def _update_gauges(self) -> None:
        publish_ledger_stats(self.ledgers, self.stats)
        self.stats.counters["consumer_reopens"] = self.commit_watch.reopens

    def _run(self) -> None:
        conf = self.conf
        cfg = consumer_config(self.bootstrap, component_group(self.topology.name, ACKER_COMPONENT), conf, self.kafka.get("consumer"))
        consumer = new_consumer(cfg)
        partitions = [TopicPartition(self.topic, p) for p in self.tasks]
        self._open_tasks(consumer, partitions)  # restore first, then read the ops
        consumer.assign([TopicPartition(self.topic, tp.partition, self.committed.get(tp.partition, OFFSET_BEGINNING)) for tp in partitions])
        gaps = FetchGaps(ACKER_COMPONENT, single=len(partitions) == 1)  # a fetch that skips ops is fetched again (streams.kafka.fetch_gaps)
        now = time.monotonic()
        flush = Every(conf.flush_interval_secs, now)
        expiry = Every(EXPIRY_CHECK_SECS, now, delay_s=0)
        try:
            while not self.stop_event.is_set():
                msgs = gaps.consume(consumer, conf.batch_size, conf.flush_interval_secs)
                for msg in msgs:
                    self._apply(msg)
                self.stats.counters["refetched"] = gaps.refetched
                now = time.monotonic()
                if expiry.due(now):
                    self._tick()
                drained = conf.flush_when_idle and len(msgs) < conf.batch_size and bool(self.results)
                due = flush.due(now)
                if drained or due:
                    self._flush(consumer, commit=due)
                if self.reopen_due:
                    consumer = self._reopen(consumer, cfg, gaps)
                self._maybe_stats(now)
        finally:
            self._flush(consumer, final=True)
            self.purger.close()
            self._maybe_stats(time.monotonic(), final=True)
            self.producer.flush(5)
            consumer.close()
