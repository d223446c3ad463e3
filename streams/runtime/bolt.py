"""The bolt executor (Storm's ``executor/bolt/BoltExecutor``).

It runs a bolt's tasks: its fixed partitions of ``squall.T.<bolt>`` (:mod:`service.control.scheduling`).
Per batch it decodes each record into a :class:`~streams.model.tuple.Tuple` and calls the task's
``execute``; a record that does not decode is dead-lettered. Every
``squall.flush.interval.secs`` (and when its input is drained) it seals what it produced since the
last flush and goes on executing; once those records are delivered, the flush's acker ops are
sent and its input positions become committable (:mod:`streams.runtime.flush_pipeline`; outputs
before acks, :mod:`streams.runtime.executor`). Every ``squall.bolt.commit.period.secs`` it commits
the offsets that were flushed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition
from typing_extensions import override

from streams.exceptions import DecodeError
from streams.kafka.clients import (
    committed_with_metadata,
    consumer_config,
    flush_patiently,
    new_consumer,
    produce_fn,
    recommit,
    reopen_consumer,
    transit_s,
    wait_patiently,
)
from streams.kafka.commit_watch import CommitWatch
from streams.kafka.fetch_gaps import FetchGaps
from streams.kafka.positions import SpoutPositions
from streams.kafka.send_now import send_now
from streams.model.batch import HoldsBatches
from streams.model.bolt import Bolt
from streams.model.tuple import Tuple, tick_tuple
from streams.monitoring.bolt_progress import Progress, encode_progress, progress_key, reexecution_window
from streams.monitoring.progress_store import TaskLives, read_progress
from streams.runtime.acks import AckBuffer
from streams.runtime.bolt_task import BoltTask, execute_guarded, record_tuples, settle_raised
from streams.runtime.collectors import BoltOutputCollectorImpl
from streams.runtime.executor import Every, Executor, ExecutorEnv
from streams.runtime.fencing import FENCE_LOG_LIMIT, EpochFence
from streams.runtime.flush_pipeline import FlushGeneration, FlushPipeline
from streams.runtime.handoff import ExecutorHandoff, TaskHandoff
from streams.runtime.routing import Router
from streams.runtime.transfer import TupleTransfer
from streams.wire.acker import why_text
from streams.wire.codec import decode_marker
from streams.wire.commits import commit_metadata, resume_at
from streams.wire.naming import component_group, component_topic, progress_topic

log = logging.getLogger("squall.executor.bolt")


LATENCY_SAMPLE = 16
"""Input tuples whose execute and process latency are measured: the first, then one in 16, each
recorded with weight 16 (Storm samples its executor stats the same way, ``topology.stats.sample.rate``
0.05). Two clock reads and two histogram records a tuple were 7-9% of the flights' parse
executor's samples (py-spy, on Apache Kafka); the quantiles and means are those of the sample, the
histograms' counts estimates, and ``capacity`` the sampled execute time times 16."""

MAX_BUFFERED_ACKER_OPS = 20_000
"""Flush early when this many acker ops are buffered (bounds memory between flushes)."""

DELIVERY_POLL_S = 0.002
"""While a flush waits for its delivery, the consume call waits at most this long (seconds): its acker ops leave soon after the broker confirmed it."""


@dataclass(slots=True)
class Flushed:
    """What a flush's delivery releases: its acker ops (None: no ackers) and each task's input position ``{partition: offset}``."""

    acks: AckBuffer | None
    offsets: dict[int, int]


class BoltExecutor(Executor):
    """Runs a bolt's tasks (its fixed partitions of ``squall.T.<bolt>``)."""

    kind = "bolt"

    def __init__(self, env: ExecutorEnv) -> None:
        super().__init__(env)
        self.cdef = self.topology.components[self.component]
        self.topic = component_topic(self.topology.name, self.component)
        self.by_partition: dict[int, BoltTask] = {}
        self._exec_hist = self.stats.hist("execute_latency")
        self._transit_hist = self.stats.hist("transit_latency")
        self._executed = 0
        """Input tuples executed, system tuples not counted (``executed``; the execute-latency histogram's count is an estimate)."""
        self._sampled = 0
        """Input tuples read: every :data:`LATENCY_SAMPLE`-th one (and the first) is timed."""
        self._process_hist = self.stats.hist("process_latency")
        self._busy_s = 0.0  # seconds spent in execute() since the last snapshot
        self._window_start = time.monotonic()
        self.positions: SpoutPositions | None = None
        if self.topology.tuple_ids:  # a stateful bolt forgets tuple ids the spouts committed past
            self.positions = SpoutPositions(self.bootstrap, self.topology, self.component, self.kafka.get("consumer"))
            self.io.source_positions = self.positions
        self.commit_watch = CommitWatch(self.component, self.conf.consumer_reopen_after_secs)
        """Commits failing this long mean a consumer that lost its coordinator: replaced (streams.kafka.commit_watch)."""
        self.reopen_due = False
        self.consumer: Consumer | None = None
        """The input consumer (for the input lag: its cached high watermarks)."""
        self.previous = TaskLives({}, [])
        """Each task's last progress record, read at start (re-executions, and a replaced owner's late commit)."""
        self.commit_meta = commit_metadata(self.epoch)
        """Every offset commit names this life's epoch (:mod:`streams.wire.commits`)."""
        self.fence = EpochFence()
        """Drops tuples an older owner of their sending task wrote late (:mod:`streams.runtime.fencing`)."""
        self._fence_logged: set[tuple[int, int]] = set()
        """The fenced records logged, ``(partition, offset)``: one line each, the first :data:`~streams.runtime.fencing.FENCE_LOG_LIMIT`."""
        self._stale_progress: list[bytes] = []
        """Progress keys of this component's older lives (:func:`~streams.monitoring.bolt_progress.newest_lives`), deleted after this life's first record."""
        self.pipeline: FlushPipeline[Flushed] = FlushPipeline(self.delivery)
        """Flushes waiting for their outputs' delivery (:mod:`streams.runtime.flush_pipeline`)."""
        self.produce = produce_fn(self.producer, self.produced, self.pipeline)
        """Every output, dead letter and acker op is produced into the open flush generation."""
        self.transfer = TupleTransfer(self.produce, self.topology.bolt_topics, max_tuples=self.conf.transfer_batch_size)
        """The collectors' tuples for a bolt, in packs; flushed at the end of every round, before a seal (:mod:`streams.runtime.transfer`)."""
        self.tuples_read = 0
        self.records_read = 0
        """Tuples and records of input executed: a consume call asks for ``squall.consume.batch`` tuples' worth of records."""
        self.batch_handoff = ExecutorHandoff(self.component, self.worker)
        """Its tasks' transactional batches handed to their next lives at a drain (:mod:`streams.runtime.handoff`)."""

    # -- tasks -----------------------------------------------------------------------
    def _open_tasks(self, partitions: list[TopicPartition]) -> None:
        """A bolt copy per task, prepared (Storm: ``prepare`` once per task)."""
        for tp in partitions:
            self.by_partition[tp.partition] = self._new_task(tp.partition)
        self.batch_handoff.holds_batches = any(isinstance(t.bolt, HoldsBatches) for t in self.by_partition.values())
        self._reexecution_windows()
        ids = [self.cdef.task_base + tp.partition for tp in partitions]
        self.local.add(self.component, ids)
        self._assigned()
        log.info("[%s] %s runs tasks %s", self.component, self.worker, sorted(ids))

    def _new_task(self, partition: int) -> BoltTask:
        """Task ``partition``'s bolt copy with its collector (producing through :attr:`produce`), prepared."""
        task_id, ctx, bolt = self._task_copy(partition, Bolt)
        collector = BoltOutputCollectorImpl(
            Router(self.topology, self.component, ctx), task_id, self.transfer.produce, self.acks, epoch=self.epoch, hooks=ctx.hooks
        )
        collector.process_latency = self._process_hist
        collector.latency_weight = LATENCY_SAMPLE
        collector.errors = self.errors
        collector.tracer = self.tracer
        collector.runs = self.transfer if self.conf.transfer_runs else None
        bolt.prepare(self.conf_dict, ctx, collector)
        return BoltTask(task_id, bolt, collector)

    @override
    def _collectors(self) -> list[Any]:
        return [task.collector for task in self.by_partition.values()]

    def _start_offsets(self, consumer: Consumer, partitions: list[TopicPartition]) -> dict[int, int]:
        """The committed offsets, except a replaced owner's late commit behind a newer life's confirmed one: then that one (counted: ``fenced_commits``)."""
        self.previous = read_progress(self.bootstrap, self.topology.name, self.component, self.kafka.get("consumer"))
        base = self.cdef.task_base
        self._stale_progress = self.previous.stale_of(self.component, {base + tp.partition for tp in partitions})
        out: dict[int, int] = {}
        undo: list[TopicPartition] = []
        for p, committed in committed_with_metadata(consumer, partitions, self.component).items():
            last = self.previous.get(base + p)
            out[p], undone = resume_at(self.component, f"{self.topic}[{p}]", committed, None if last is None else (last.epoch, last.committed))
            if undone:
                self.stats.inc("fenced_commits")
                undo.append(TopicPartition(self.topic, p, out[p], metadata=self.commit_meta))
        recommit(consumer, undo, self.component)
        return out

    def _reexecution_windows(self) -> None:
        """From the tasks' last progress records: which input records this life executes again, and why."""
        previous = self.previous
        for p, task in self.by_partition.items():
            task.reexecute_until, task.reexecute_cause = reexecution_window(previous.get(task.task_id), self.start_offsets.get(p, -1), self.place)
            last = previous.get(task.task_id)
            task.written_offset = last.flushed if last is not None else -1
            task.start_commit = max(self.start_offsets.get(p, -1), -1)
            if last is not None and last.fence:  # what the last life's reader learned before this one's start holds (streams.runtime.fencing)
                self.fence.seed(p, last.fence, self.start_offsets.get(p, -1))
            self._take_handoff(task, last, self.start_offsets.get(p, -1))
            if task.reexecute_until >= 0:
                log.info(
                    "[%s] task %d executes %s[%d] again from %d to %d (%s: its last life flushed past its last commit)",
                    self.component,
                    task.task_id,
                    self.topic,
                    p,
                    self.start_offsets.get(p, -1),
                    task.reexecute_until,
                    task.reexecute_cause,
                )

    def _write_progress(self) -> None:
        """Each task's flushed offset, confirmed commit and hand-off, where one moved (after the flush that made it safe, or the commit)."""
        topic = progress_topic(self.topology.name)
        for p, task in self.by_partition.items():
            committed = max(task.committed_offset, task.start_commit)
            carry = task.carry if task.carry is not None and committed < task.carry[1] else None
            if task.flushed_offset > task.written_offset or committed > task.written_commit or carry != task.written_carry:
                flushed = max(task.flushed_offset, task.written_offset)
                fence = self.fence.entries(p, committed)
                self.produce(
                    topic, encode_progress(flushed, self.place, self.epoch, committed, carry, fence), key=progress_key(self.component, task.task_id, self.epoch)
                )
                task.written_offset, task.written_commit, task.written_carry = flushed, committed, carry
                if self._stale_progress:  # this life's first record is out: its older lives' keys go (compaction keeps the newest only)
                    for key in self._stale_progress:
                        self.produce(topic, None, key=key)
                    self._stale_progress = []

    # -- a drain's hand-off of transactional batches (streams.runtime.handoff) --------
    def _take_handoff(self, task: BoltTask, last: Progress | None, start: int) -> None:
        """Step 4: the last life handed its batches on; from ``start`` up to its ``L`` this life executes the later batches only."""
        if last is None or last.handoff is None or not isinstance(task.bolt, HoldsBatches):
            return
        cutoff, until = last.handoff
        if until <= max(start, 0):
            return
        task.handoff = TaskHandoff.take(cutoff, until)
        task.carry = last.handoff
        log.info(
            "[%s] task %d takes over %s[%d] from %d: up to %d it executes batches after txid %d only (its last life finished those up to it)",
            self.component,
            task.task_id,
            self.topic,
            task.task_id - self.cdef.task_base,
            start,
            until,
            cutoff,
        )

    def _cleanup(self, tasks: list[BoltTask]) -> None:
        for task in tasks:
            try:
                task.bolt.cleanup()
                self.hook_cleanup(task.task_id)
            except Exception:
                log.exception("[%s] task %d cleanup failed", self.component, task.task_id)

    # -- processing ------------------------------------------------------------------
    def _process(self, msg: Message) -> None:
        if msg.error():
            log.warning("[%s] consumer error: %s", self.component, msg.error())
            return
        p = msg.partition() or 0
        task = self.by_partition.get(p)
        if task is None:
            return
        off = msg.offset() or 0
        value = msg.value()
        if value is not None and value.startswith(b"[5,"):  # an epoch marker (no slice: this runs per record)
            self._marked(task, msg, value, p, off)
            return
        # Every record's transit is recorded: a record is a pack of up to squall.transfer.batch.size
        # tuples, so its cost per tuple is small, and one in 16 (as before packs) left the first
        # hop's p99 to the slowest of about 100 samples in a 10 s latency run.
        transit = transit_s(msg, time.time())
        if transit is not None:
            self._transit_hist.record(transit)
        try:
            tuples = record_tuples(self.topology, self.component, self.topic, value, p, off)
        except DecodeError as exc:
            self.poison(msg, exc, task.task_id)
            task.next_offset = off + 1
            return
        self.records_read += 1
        self.tuples_read += len(tuples)
        if off < task.reexecute_until:  # counted in tuples, as squall_reexecutions_total says (a record may be a pack)
            self.stats.inc("reexecuted_" + task.reexecute_cause, len(tuples))
        now = time.perf_counter()
        tracer = self.tracer
        handoff = task.handoff
        collector = task.collector
        execute = task.bolt.execute
        plain = tracer is None and not collector.hooks  # may call execute itself (below)
        sender = epoch = -1  # the sender task and life the fence took last in this record: a run's tuples share them
        stream: str | None = None
        system = False
        sampled = self._sampled
        executed = 0
        for t in tuples:  # every tuple of a pack executes before the offset moves past its record
            if handoff is not None and not handoff.executes(t, off):
                continue  # the other life's (streams.runtime.handoff)
            if t.source_task != sender or t.epoch != epoch:
                if not self.fence.admit(p, t.source_task, t.epoch, off):
                    self._fenced(task, t)
                    continue
                sender, epoch = t.source_task, t.epoch
            if t.stream is not stream:
                stream = t.stream
                system = stream.startswith("__")
            sampled += 1
            if plain and not system and sampled % LATENCY_SAMPLE != 1:
                # The common tuple (not timed, traced or hooked; not a system tuple): execute_guarded's
                # work without its calls, as _execute would do it.
                try:
                    execute(t)
                except Exception as exc:
                    self._raised(task, t, settle_raised(collector, t, exc))
                executed += 1
                continue
            if sampled % LATENCY_SAMPLE == 1:  # timed: execute and process latency (weight LATENCY_SAMPLE)
                t.received_at = now
            if tracer is not None:
                limit = tracer.limit
                for root in t.anchors:  # decided once per tuple; execute, ack and fail read t.traced
                    if (root >> 32) < limit:
                        t.traced = True
                        tracer.events_of(t, "receive", task.task_id)
                        break
            self._execute(task, t)
        self._sampled = sampled
        self._executed += executed
        task.next_offset = off + 1
        if handoff is not None and handoff.mode == 0:
            task.handoff = None  # taking: past the last life's records

    def _marked(self, task: BoltTask, msg: Message, value: bytes, p: int, off: int) -> None:
        """An epoch marker: its tasks' older lives are fenced in this partition from here on (:mod:`streams.runtime.fencing`)."""
        marker = decode_marker(value)
        if marker is None:
            self.poison(msg, DecodeError("a malformed epoch marker", component=self.component, topic=self.topic, partition=p, offset=off), task.task_id)
        else:
            _, senders, epoch = marker
            for sender in senders:
                self.fence.mark(p, sender, epoch, off)
        task.next_offset = off + 1

    def _fenced(self, task: BoltTask, t: Tuple) -> None:
        """Drop ``t``: an older owner of its sending task wrote it after a newer one did; fail its trees (replayed now, not at the timeout) and count it."""
        newer = self.fence.highest_of(t.partition, t.source_task)
        self.stats.inc("fenced_tuples")
        task.collector.fail_because(t, f"fenced: {t.source_component} task {t.source_task} wrote it in epoch {t.epoch}, after epoch {newer}")
        key = (t.partition, t.offset)
        if key not in self._fence_logged and len(self._fence_logged) < FENCE_LOG_LIMIT:  # once per record (a pack's tuples share it)
            self._fence_logged.add(key)
            log.warning(
                "[%s] fenced %s: %s task %d wrote it in epoch %d, but its epoch %s wrote to this partition before"
                " (a replaced worker's late write; dropped, its trees failed)",
                self.component,
                t.where,
                t.source_component,
                t.source_task,
                t.epoch,
                newer,
            )

    def _execute(self, task: BoltTask, t: Tuple) -> None:
        """Execute ``t`` on its task; time it if it is a sampled input tuple (:data:`LATENCY_SAMPLE`) or a system tuple (a tick: ``capacity``)."""
        system = t.stream[:2] == "__"  # ticks, batch markers, commits: not counted, as in Storm's UI
        timed = system or t.received_at
        start = time.perf_counter() if timed else 0.0
        self._raised(task, t, execute_guarded(task.bolt, task.collector, t))
        if t.traced and self.tracer is not None:  # execute returned: its time is this event's minus the receive's
            self.tracer.events_of(t, "execute", task.task_id)
        if not system:
            self._executed += 1
        if timed:
            took = time.perf_counter() - start
            if system:
                self._busy_s += took
            else:
                self._busy_s += took * LATENCY_SAMPLE
                self._exec_hist.record(took, LATENCY_SAMPLE)

    def _raised(self, task: BoltTask, t: Tuple, exc: Exception | None) -> None:
        """Count, report and log ``exc``, raised by ``execute`` on ``t``, which is failed already (:func:`~streams.runtime.bolt_task.settle_raised`).

        ``exc`` None (no exception, or a FailedException): nothing to do.
        """
        if exc is not None:
            self.stats.inc("errors")
            self.errors.report("exception", task.task_id, exc=exc, where=t.where, roots=t.anchors)
            log.error("[%s] task %d failed on %s: %s", self.component, task.task_id, t.where, exc, exc_info=exc)

    def _flush(self, drained: bool = False) -> None:
        """Seal what was produced since the last flush, with the acker ops buffered now and each task's input position.

        At full speed it does not wait: the executor goes on executing while the broker
        confirms. With its input ``drained`` there is nothing to execute meanwhile, so it waits
        as a synchronous flush does: librdkafka sends what is queued at once while a flush call
        lasts (not after ``linger.ms``), and the acker ops leave as soon as the broker confirmed
        the outputs. Measured on Apache Kafka, the latency workload at half rate: the second and
        third hops' transit p50 3.4 ms waiting, 6.5-6.8 ms not waiting (one run each).

        Protocol (:mod:`streams.runtime.flush_pipeline`):

        1. Take the buffered acker ops: they ack tuples whose outputs were all produced by now.
        2. Seal the open generation with them and each task's ``next_offset``; the next
           records go into a new one.
        3. Drained: wait until everything produced was reported. Else, if as many flushes wait
           as may, wait for the oldest (the broker sets the pace).
        4. Release every flush that was delivered (:meth:`_release_delivered`). Drained: send
           the acker ops it released at once (:func:`~streams.kafka.send_now.send_now`).
        """
        # 1. the acker ops buffered now (their tuples' packs are produced first)
        self.transfer.flush()
        acks = self.acks.take() if self.acks is not None and len(self.acks) else None
        # 2. seal
        offsets = {}
        for p, task in self.by_partition.items():
            offsets[p] = task.sealed_offset = task.next_offset
        self.pipeline.seal(Flushed(acks, offsets))
        # 3. wait: for everything when drained, else for the oldest when too many wait
        if drained:
            flush_patiently(self.producer, self.component, "outputs", give_up=self._lease_lapsed())
        elif self.pipeline.full:
            self._await_delivery(self.pipeline.oldest_delivered)
        # 4. release
        self._release_delivered()
        if drained:  # the acker ops just released leave now, not after linger.ms
            send_now(self.producer)

    def _await_delivery(self, done: Callable[[], bool]) -> None:
        """Serve delivery reports until ``done()``, however long the broker takes (a lapsed lease purges what waits: its flushes fail their trees)."""
        wait_patiently(self.producer, self.component, "outputs", done, give_up=self._lease_lapsed())

    def _lease_lapsed(self) -> Callable[[], bool] | None:
        """A wait's ``give_up``: the worker's lease lapsed long enough to purge (:mod:`streams.runtime.lease`); None without a lease."""
        lease = self.lease
        return None if lease is None else lambda: lease.purge_due(time.time())

    def _release_delivered(self) -> None:
        """Serve delivery reports; for each flush delivered (oldest first): send its acker ops, then make its input positions committable."""
        self.producer.poll(0)
        released = self.pipeline.delivered()
        for gen in released:
            self._release(gen)
        if released:
            self._write_progress()

    def _release(self, gen: FlushGeneration[Flushed]) -> None:
        flushed = gen.payload
        assert flushed is not None
        acks = flushed.acks
        if acks is not None:
            if gen.failures:
                n = acks.fail_acks(why_text(self.component, "outputs lost (the broker did not take them)"))
                log.error("[%s] %d outputs lost in a flush: failing %d trees instead of acking", self.component, gen.failures, n)
            self.stats.inc("acker_ops", acks.flush(self.produce))
        for p, off in flushed.offsets.items():
            task = self.by_partition.get(p)
            if task is None:
                continue
            handoff = task.handoff
            if handoff is not None and handoff.held_from >= 0:  # giving: commit up to the first record left to the next life
                task.carry = (handoff.cutoff, max(off, task.carry[1] if task.carry is not None else 0))
                off = handoff.committable(off)
            if off > task.flushed_offset:
                task.flushed_offset = off

    def _unflushed(self) -> bool:
        """Outputs or acker ops were made since the last flush, or input was executed since."""
        if (self.acks is not None and len(self.acks)) or self.pipeline.current.records:
            return True
        return any(t.next_offset != t.sealed_offset for t in self.by_partition.values())

    def _commit(self, consumer: Consumer, sync: bool = False) -> None:
        offsets = [
            TopicPartition(self.topic, p, t.flushed_offset, metadata=self.commit_meta)
            for p, t in self.by_partition.items()
            if t.flushed_offset >= 0 and t.flushed_offset != t.committed_offset
        ]
        if not offsets or not self.leased():  # a worker without its lease commits nothing (streams.runtime.lease)
            return
        try:
            consumer.commit(offsets=offsets, asynchronous=not sync)
            if sync:  # an asynchronous commit counts once the broker confirmed it (_on_commit)
                self.commit_watch.ok()
                for tp in offsets:
                    self.by_partition[tp.partition].committed_offset = tp.offset
                self.purger.committed((tp.topic, tp.partition, tp.offset) for tp in offsets)
        except KafkaException as exc:
            log.warning("[%s] offset commit failed (will retry): %s", self.component, exc)
            self.reopen_due = self.reopen_due or self.commit_watch.failed(time.monotonic())

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """The consumer's commit callback (on this thread, from ``consume``): confirmed offsets may be purged."""
        if err is not None:
            log.warning("[%s] offset commit failed (retried at the next commit): %s", self.component, err)
            self.reopen_due = self.reopen_due or self.commit_watch.failed(time.monotonic())
            return
        self.commit_watch.ok()
        done = [tp for tp in partitions if tp.error is None and tp.offset >= 0 and tp.topic == self.topic]
        for tp in done:
            task = self.by_partition.get(tp.partition)
            if task is not None and tp.offset > task.committed_offset:
                task.committed_offset = tp.offset
        self.purger.committed((tp.topic, tp.partition, tp.offset) for tp in done)

    def _reopen(self, consumer: Consumer, cfg: dict[str, object], gaps: FetchGaps) -> Consumer:
        """A new consumer after the last record each task executed, for one that lost its coordinator for good."""
        self.reopen_due = False
        positions = [
            TopicPartition(self.topic, p, t.next_offset if t.next_offset >= 0 else self.start_offsets.get(p, OFFSET_BEGINNING))
            for p, t in sorted(self.by_partition.items())
        ]
        return reopen_consumer(consumer, cfg, positions, self.component, gaps)

    def _update_gauges(self) -> None:
        emitted = transferred = acked = failed = 0
        for t in self.by_partition.values():
            emitted += t.collector.emitted
            transferred += t.collector.transferred
            acked += t.collector.acked
            failed += t.collector.failed
        now = time.monotonic()
        # Storm's capacity: the fraction of the window spent executing (near 1: saturated).
        self.stats.gauges["capacity"] = min(1.0, self._busy_s / max(now - self._window_start, 1e-9))
        self._busy_s, self._window_start = 0.0, now
        self.stats.gauges["tasks"] = len(self.by_partition)
        self.stats.tasks = sorted(t.task_id for t in self.by_partition.values())
        self.stats.counters["executed"] = self._executed
        self.stats.counters["emitted"] = emitted
        self.stats.counters["transferred"] = transferred
        self.stats.counters["acked"] = acked
        self.stats.counters["failed"] = failed
        self.stats.counters["consumer_reopens"] = self.commit_watch.reopens
        self._input_lag()

    def _input_lag(self) -> None:
        """Each task's input lag, ``"topic[p]" -> high watermark - next offset`` (backpressure: records waiting to execute, each one tuple or a pack of them).

        The high watermark is the one the last Fetch response reported (no request is made).
        """
        consumer = self.consumer
        lag = self.stats.partition_lag
        lag.clear()
        if consumer is None:
            return
        for p, task in self.by_partition.items():
            position = task.next_offset if task.next_offset >= 0 else self.start_offsets.get(p, -1)
            try:
                _, high = consumer.get_watermark_offsets(TopicPartition(self.topic, p), cached=True)
            except KafkaException:
                continue
            if high is not None and high >= 0 and position >= 0:
                lag[f"{self.topic}[{p}]"] = max(0, high - position)

    def _records_wanted(self) -> int:
        """Records to ask a consume call for: about ``squall.consume.batch`` tuples, at the tuples a record held so far (packs)."""
        if self.tuples_read <= self.records_read:
            return self.conf.batch_size
        return max(1, self.conf.batch_size * self.records_read // self.tuples_read)

    def _run(self) -> None:
        conf = self.conf
        cfg = consumer_config(self.bootstrap, component_group(self.topology.name, self.component), conf, self.kafka.get("consumer"))
        cfg["on_commit"] = self._on_commit  # only a commit the broker confirmed may be purged
        consumer = self.consumer = new_consumer(cfg)
        self._open_tasks(self._assign(consumer, self.topic))
        gaps = FetchGaps(self.component, single=len(self.by_partition) == 1)  # a fetch that skips offsets is fetched again (streams.kafka.fetch_gaps)
        now = time.monotonic()
        ticks = Every(conf.tick_tuple_freq_secs or float("inf"), now)
        flush = Every(conf.flush_interval_secs, now)
        commit = Every(conf.bolt_commit_period_secs, now)
        try:
            while not self.stop_event.is_set():
                want = self._records_wanted()
                if self.batch_handoff.active:
                    paused = self.batch_handoff.round(self.by_partition.values())
                    msgs = [] if paused else gaps.consume(consumer, want, DELIVERY_POLL_S if self.pipeline.waiting else 0.05)
                    if paused:
                        self.stop_event.wait(0.02)
                else:
                    msgs = gaps.consume(consumer, want, DELIVERY_POLL_S if self.pipeline.waiting else conf.flush_interval_secs)
                for msg in msgs:
                    self._process(msg)
                self.stats.counters["refetched"] = gaps.refetched
                now = time.monotonic()
                if ticks.due(now):
                    for task in list(self.by_partition.values()):
                        self._execute(task, tick_tuple())
                self.transfer.flush()  # the round's packs leave now: a pack waits for no later round
                drained = conf.flush_when_idle and len(msgs) < want and self._unflushed()
                if drained or flush.due(now) or (self.acks is not None and len(self.acks) > MAX_BUFFERED_ACKER_OPS):
                    self._flush(drained)
                elif self.pipeline.waiting:
                    self._release_delivered()
                if commit.due(now):
                    self._commit(consumer)
                    self.purger.maybe_purge()
                if self.reopen_due:
                    consumer = self.consumer = self._reopen(consumer, cfg, gaps)
                self._maybe_stats(now)
        finally:
            # cleanup() first: a bolt that holds tuples (deferred acks, windows) can emit and
            # ack them; the flush and commit then make that durable before the tasks stop.
            self._cleanup(list(self.by_partition.values()))
            self._flush(drained=True)  # waits for every flush, then releases them all
            self._commit(consumer, sync=True)
            self._write_progress()  # the last confirmed commit too: a replaced owner's late one cannot move it back unseen
            self.purger.close()
            self._maybe_stats(time.monotonic(), final=True)
            self.producer.flush(5)
            consumer.close()
            self.consumer = None
            if self.positions is not None:
                self.positions.close()
