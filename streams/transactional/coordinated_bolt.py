"""CoordinatedBolt: runs any bolt of a transactional topology batch by batch.

Storm's ``CoordinatedBolt`` + ``BatchBoltExecutor``, as a wrapper that a transactional spout
puts around every bolt (:mod:`streams.transactional.wiring`).

Per batch and task:

1. Data tuples go to the user's bolt: a :class:`~streams.model.batch.BatchBolt` gets a fresh copy
   per batch and its tuples are acked for it after ``execute``; an ordinary bolt acks its
   own. What the task emits per target task is counted (:class:`BatchTracker`).
2. End markers arrive from every upstream task (``__batch_end``). Once every marker is in
   and every announced tuple has arrived, the input is complete:
   * a non-committer finishes now: ``finish_batch()`` (emits anchored to the markers), then
     its own markers go to every task of every subscriber, then the markers are acked;
   * a committer acks the markers (the batch's processing is done here) and keeps its
     BatchBolt copy until the batch's commit tuple (``__commit``) arrives: then it finishes
     the same way, anchored to the commit tuple. The transactional spout sends commits
     strictly in txid order, one batch at a time.
3. A commit for a batch this task knows nothing of (it restarted and lost it) is failed, so
   the batch is replayed; a stale attempt's tuples are acked and dropped.

Because the markers are anchored in the batch's tree, the tree cannot complete before every
task has finished its part, whatever order records arrive in.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from typing_extensions import override

from streams.exceptions import FailedException, FatalError
from streams.model.batch import BATCH_END_FIELDS, BATCH_END_STREAM, COMMIT_STREAM, SYSTEM_STREAMS, BatchAttempt, BatchBolt, BatchOutputCollector
from streams.model.bolt import Bolt, DelegatingBolt
from streams.model.collector import Anchors, OutputCollector
from streams.model.component import Component, OutputFieldsDeclarer
from streams.model.context import TopologyContext
from streams.model.spec import Topology
from streams.model.tuple import DEFAULT_STREAM, Tuple
from streams.transactional.batch_tracker import BatchTracker, TaskBatch

log = logging.getLogger("squall.batch")


class _Counting:
    """An ordinary bolt's collector (:class:`~streams.model.collector.OutputCollector`), counting what it emits per batch and target task."""

    def __init__(self, collector: OutputCollector, owner: CoordinatedBolt) -> None:
        self._c = collector
        self._owner = owner

    def emit(self, values: list[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit through the real collector and count it against the anchors' batch.

        :meth:`CoordinatedBolt._count`, inlined: every word a split emits comes here.
        """
        tasks = self._c.emit(values, anchors, stream)
        owner = self._owner
        b = owner._current or owner._batch_of(anchors)
        if b is not None:
            sent = b.sent
            for t in tasks:
                sent[t] = sent.get(t, 0) + 1
        return tasks

    def emit_direct(self, task: int, values: list[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> None:
        """Emit to one task through the real collector and count it."""
        self._c.emit_direct(task, values, anchors=anchors, stream=stream)
        self._owner._count(anchors, [task])

    def ack(self, tuple: Tuple) -> None:  # noqa: A002
        """Ack through the real collector."""
        self._c.ack(tuple)

    def fail(self, tuple: Tuple, reason: str | None = None) -> None:  # noqa: A002
        """Fail through the real collector."""
        self._c.fail(tuple, reason)

    def report_error(self, error: BaseException | str, tuple: Tuple | None = None) -> None:  # noqa: A002
        """Report through the real collector (Storm's ``reportError``)."""
        self._c.report_error(error, tuple)

    def reset_timeout(self, tuple: Tuple) -> None:  # noqa: A002
        """Reset the trees' timeout through the real collector."""
        self._c.reset_timeout(tuple)


class _Unprepared:
    """The collector of a CoordinatedBolt before ``prepare``: any use is a bug."""

    def _fatal(self, *args: Any, **kwargs: Any) -> Any:
        raise FatalError("a CoordinatedBolt was used before prepare()")

    emit = emit_direct = ack = fail = reset_timeout = report_error = _fatal


_UNPREPARED: OutputCollector = _Unprepared()


class CoordinatedBolt(DelegatingBolt):
    """Wraps a bolt of a transactional topology (see the module docstring).

    Args:
      inner: the user's bolt (a BatchBolt, or an ordinary Bolt such as a wrapped BasicBolt).
      committer: whether it is a committer bolt.
    Not thread-safe: one copy per task, on the executor's thread.
    """

    def __init__(self, inner: Component, committer: bool) -> None:
        super().__init__(inner)
        self.committer = committer
        self.batch_bolt = isinstance(inner, BatchBolt)
        self.tracker = BatchTracker(frozenset(), committer)
        self.downstream: list[int] = []
        self.input_at_commit = False
        """Its input comes in the commit phase (it is downstream of a committer)."""
        self._conf: dict[str, Any] = {}
        self._context: TopologyContext | None = None
        self._me = "?"
        """The component id, for log lines (set by :meth:`prepare`)."""
        self.collector: OutputCollector = _UNPREPARED
        self._anchors: Tuple | list[Tuple] | None = None
        """What a BatchBolt's emits are anchored to: the tuple it executes (a Tuple, so the
        collector's emit hot path takes them), or the markers or the commit its finish_batch answers."""
        self._current: TaskBatch | None = None
        self.clock: Callable[[], float] = time.monotonic
        """Monotonic seconds, for ``finish_batch_latency`` (injectable)."""
        self.finish_latency: Callable[[float], None] = _ignore
        """Records each batch's ``finish_batch`` and end markers (a committer's: its state transaction), seconds."""

    # -- declaration ------------------------------------------------------------------
    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        super().declare_output_fields(declarer)
        declarer.declare(list(BATCH_END_FIELDS), stream=BATCH_END_STREAM, direct=True)

    # -- lifecycle -------------------------------------------------------------------
    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self._conf = conf
        self._context = context
        self._me = context.this_component_id
        topology = context.topology
        me = context.this_component_id
        cdef = topology.components[me]
        upstream = {t for sub in cdef.inputs if sub.stream not in SYSTEM_STREAMS for t in topology.components[sub.component].task_ids}
        self.tracker = BatchTracker(frozenset(upstream), self.committer)
        targets: dict[str, range] = {}
        for stream in cdef.streams:
            if stream == BATCH_END_STREAM:
                continue
            for target, _sub in topology.subscribers(me, stream):
                targets[target.id] = target.task_ids
        self.downstream = sorted(t for ids in targets.values() for t in ids)
        self.input_at_commit = commit_phase_input(topology, me)
        self.finish_latency = context.register_latency("finish_batch_latency")
        if not self.batch_bolt:
            assert isinstance(self.inner, Bolt)
            self.inner.prepare(conf, context, _Counting(collector, self))

    @override
    def cleanup(self) -> None:
        if not self.batch_bolt:
            assert isinstance(self.inner, Bolt)
            self.inner.cleanup()

    # -- a drain's hand-off (streams.model.batch.HoldsBatches) -------------------------
    def highest_txid(self) -> int:
        """The highest txid this task has seen (-1: none); see :meth:`BatchTracker.highest_txid`."""
        return self.tracker.highest_txid()

    def holds_batches_through(self, txid: int) -> bool:
        """True while this task holds a batch with a txid ``<= txid`` (:mod:`streams.runtime.handoff`)."""
        return self.tracker.holds_through(txid)

    # -- tuples ----------------------------------------------------------------------
    @override
    def execute(self, tuple: Tuple) -> None:
        stream = tuple.stream
        batch = tuple.batch
        tracker = self.tracker
        if batch is not None and stream != BATCH_END_STREAM and stream != COMMIT_STREAM:  # a data tuple: the usual case, first
            b = tracker.data(batch[0], batch[1], tuple.source_task, tuple.epoch)
            if b is None:
                self.collector.ack(tuple)  # a stale attempt's tuple, or a duplicate
            elif b.broken:
                self._broken(b, tuple)
            else:
                bolt = b.bolt
                if bolt is None and self.batch_bolt:  # the batch's first tuple here: its copy is made
                    bolt = self._bolt_of(b)
                if bolt is not None:
                    # A BatchBolt's data tuple, inline (no call of its own: every tuple comes here). The
                    # batch's copy executes it, its emits anchored to it; acked, or failed if it raised:
                    # a FailedException quietly (the batch replays), any other exception logged, and a
                    # FatalError leaves (no tuple's fail).
                    self._anchors = tuple
                    try:
                        bolt.execute(tuple)
                    except FatalError:
                        raise
                    except Exception as exc:
                        if not isinstance(exc, FailedException):
                            log.exception("[%s] batch %d.%d failed on %s: %s", self._me, b.txid, b.attempt, tuple.where, exc)
                        self.collector.fail(tuple)
                    else:
                        self.collector.ack(tuple)
                    finally:
                        self._anchors = None
                else:
                    self._data(b, tuple)
                if len(b.expected) >= len(tracker.upstream):  # only once every marker is in can the input be complete
                    self._progress(b, None)
        elif stream == BATCH_END_STREAM:
            txid, attempt, count = tuple.values
            b = tracker.marker(txid, attempt, tuple.source_task, count, tuple, tuple.epoch)
            if b is not None and b.broken:
                self._broken(b, tuple)
            else:
                self._progress(b, tuple)
        elif stream == COMMIT_STREAM:
            self._commit(tuple)
        elif self.batch_bolt:  # a tick, or a tuple from outside any batch
            self.collector.ack(tuple)
        else:
            assert isinstance(self.inner, Bolt)
            self.inner.execute(tuple)
        if tracker.superseded:
            self._settle_superseded()

    def _data(self, b: TaskBatch, t: Tuple) -> None:
        """An ordinary bolt's data tuple: its emits count against ``b`` (:class:`_Counting`)."""
        assert isinstance(self.inner, Bolt)
        self._current = b
        try:
            self.inner.execute(t)
        finally:
            self._current = None

    def _bolt_of(self, b: TaskBatch) -> BatchBolt:
        if b.bolt is None:
            assert self._context is not None, "prepare() runs before any tuple"
            bolt = copy.deepcopy(self.inner)
            assert isinstance(bolt, BatchBolt)
            bolt.prepare(self._conf, self._context, BatchOutputCollector(self._emit, self._emit_direct), BatchAttempt(b.txid, b.attempt))
            b.bolt = bolt
        bolt_obj: BatchBolt = b.bolt
        return bolt_obj

    def _emit(self, values: list[Any], stream: str) -> list[int]:
        tasks: list[int] = self.collector.emit(values, anchors=self._anchors, stream=stream)
        self._count(self._anchors, tasks)
        return tasks

    def _emit_direct(self, task: int, values: list[Any], stream: str) -> None:
        self.collector.emit_direct(task, values, anchors=self._anchors, stream=stream)
        self._count(self._anchors, [task])

    def _count(self, anchors: Tuple | Sequence[Tuple] | None, tasks: list[int]) -> None:
        """Count an emit against the batch being executed, or else the batch of its anchors (once per emit: the usual case first)."""
        b = self._current or self._batch_of(anchors)
        if b is not None:
            sent = b.sent
            for t in tasks:
                sent[t] = sent.get(t, 0) + 1

    def _batch_of(self, anchors: Tuple | Sequence[Tuple] | None) -> TaskBatch | None:
        """The batch attempt held here that the first anchor belongs to (None: none, or a stale attempt)."""
        first = anchors if isinstance(anchors, Tuple) else (anchors[0] if anchors else None)
        if first is None or first.batch is None:
            return None
        b = self.tracker.batches.get(first.batch[0])
        return b if b is not None and b.attempt == first.batch[1] else None

    def _broken(self, b: TaskBatch, t: Tuple) -> None:
        """An upstream task restarted mid-batch and re-sent part of it.

        What this task holds for the attempt cannot be trusted, so the tuple fails and the
        batch replays.
        """
        if b.bolt is not None:
            b.bolt = None
            log.warning(
                "[%s] batch %d.%d: task %d restarted mid-batch and sent it again; failing the batch (it replays)",
                self._me,
                b.txid,
                b.attempt,
                t.source_task,
            )
        self.collector.fail(t)

    # -- batch progress --------------------------------------------------------------
    def _progress(self, b: TaskBatch | None, marker: Tuple | None) -> None:
        if b is None:
            if marker is not None:
                self.collector.ack(marker)  # a stale attempt's marker
            return
        if b.input_done or not self.tracker.complete(b):
            return
        b.input_done = True
        if self.committer:
            for m in b.markers:  # processing is done here; the batch waits for its commit
                self.collector.ack(m)
            b.markers = []
        if self.tracker.ready(b):
            self._finish(b)

    def _commit(self, t: Tuple) -> None:
        txid, attempt = t.values
        if self.input_at_commit and not self.tracker.is_duplicate_commit(txid, attempt):
            self.tracker.batch(txid, attempt)  # its input is still to come, in this commit phase
        b = self.tracker.commit(txid, attempt, t)
        if b is None:
            if self.tracker.is_duplicate_commit(txid, attempt):
                self.collector.ack(t)
            else:
                log.warning("[%s] commit of batch %d.%d that this task does not hold: failing it (the batch replays)", self._me, txid, attempt)
                self.collector.fail(t)
            return
        if self.tracker.ready(b):
            self._finish(b)

    def _finish(self, b: TaskBatch) -> None:
        """finish_batch, then this task's markers, anchored to the markers or the commit."""
        anchors = [b.commit] if self.committer else list(b.markers)
        self._anchors = anchors
        began = self.clock()
        try:
            if self.batch_bolt:
                self._bolt_of(b).finish_batch()
            for task in self.downstream:
                self.collector.emit_direct(task, [b.txid, b.attempt, b.sent.get(task, 0)], anchors=anchors, stream=BATCH_END_STREAM)
        except FatalError:
            raise  # e.g. a fenced transactional producer: the worker restarts, replaying the batch does not help
        except Exception as exc:
            log.exception("[%s] finish_batch of batch %d.%d failed: %s", self._me, b.txid, b.attempt, exc)
            for a in anchors:
                self.collector.fail(a)
            self.tracker.finished(b)
            return
        finally:
            self._anchors = None
        for a in anchors:
            self.collector.ack(a)
        self.tracker.finished(b)
        self.finish_latency(self.clock() - began)

    def _settle_superseded(self) -> None:
        """Ack what a task held for attempts a replay superseded (their trees already failed)."""
        if not self.tracker.superseded:
            return
        for old in self.tracker.superseded:
            for m in old.markers:
                self.collector.ack(m)
            if old.commit is not None:
                self.collector.ack(old.commit)
        self.tracker.superseded = []


def commit_phase_input(topology: Topology, component: str) -> bool:
    """True if ``component`` receives tuples only in the commit phase.

    One of its inputs is a committer, or is itself fed in the commit phase (seed point 14).
    """
    seen: set[str] = set()

    def fed_at_commit(c: str) -> bool:
        if c in seen:
            return False
        seen.add(c)
        for sub in topology.components[c].inputs:
            if sub.stream in SYSTEM_STREAMS:
                continue
            if topology.components[sub.component].committer or fed_at_commit(sub.component):
                return True
        return False

    return fed_at_commit(component)


def _ignore(seconds: float) -> None:
    """Records nothing (before ``prepare``)."""
