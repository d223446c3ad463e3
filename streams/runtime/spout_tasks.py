"""The Kafka-free heart of the spout executor: its tasks, the trees in flight, the pending bound.

Storm's ``executor/spout/SpoutExecutor`` knows only ``ISpout``; so does this class. It
calls ``next_tuple`` within the pending bound, applies ack results (``spout.ack`` /
``spout.fail``), and fails trees past the message timeout. Where results come from and
when the loop runs is the caller's: :class:`streams.runtime.spout.SpoutExecutor` reads them
from ``squall.T.__ack_result``; the test kit (:mod:`streams.testing`) from its in-memory log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from streams.config import TopologyConfig
from streams.kafka.source import FailureNotes, KafkaSource
from streams.model.hooks import SpoutAckInfo, SpoutFailInfo
from streams.model.spec import Topology
from streams.model.spout import Spout
from streams.monitoring.spout_ledger import TaskLedger
from streams.monitoring.stats import ExecutorStats
from streams.runtime.collectors import SpoutOutputCollectorImpl
from streams.runtime.inflight import InFlightTrees
from streams.runtime.pending_bound import AdaptiveBound, FixedBound, PendingBound
from streams.wire.acker import ACKER_TIMEOUT, RESULT_ACK, RESULT_RESET

log = logging.getLogger("squall.executor.spout")

MAX_CALLS_PER_ROUND = 2000
"""``next_tuple`` calls per task per loop round, so results and timeouts are not starved."""


@dataclass(slots=True)
class SpoutTask:
    """One task of this executor: its spout copy and collector.

    ``source`` is the same object as ``spout`` when it reads Kafka (else ``None``);
    ``immediate`` holds ``(message id, weight)`` to ack at once (untracked emits, as Storm
    does; the weight is the message ids a :meth:`~streams.runtime.collectors.SpoutOutputCollector.emit_tree` carried).
    """

    task_id: int
    spout: Spout
    collector: SpoutOutputCollectorImpl
    ledger: TaskLedger
    source: KafkaSource | None = None
    immediate: list[tuple[Any, int]] = field(default_factory=list)


class SpoutTasks:
    """A spout executor's tasks and the trees they have in flight (pure: no I/O, injected clock).

    Args:
      inflight: the trees in flight (its clock is this object's clock: seconds, monotonic).
      bound: the pending bound per task (fixed or adaptive).
      stats: where ``complete_latency`` is recorded.
    Not thread-safe: the executor's thread makes every call.
    """

    def __init__(self, inflight: InFlightTrees, bound: PendingBound, stats: ExecutorStats) -> None:
        self.by_task: dict[int, SpoutTask] = {}
        self.inflight = inflight
        self.bound = bound
        self.stats = stats
        self.held = False
        """The last :meth:`emit` round found a task at its pending bound (backpressure: ``held_back_seconds``)."""
        self.on_outcome: Callable[[int, Any, str], None] | None = None
        """Called with ``(task id, message id, outcome)`` for each settled tree: ``acked``,
        ``failed`` or ``timed_out``, before the spout's ``ack`` or ``fail`` (so a dead letter the spout writes
        in ``fail`` comes after the failure that caused it). The test kit's record of trees; None: nobody listens."""

    def tracker(self, task_id: int, ledger: TaskLedger) -> Callable[[int, Any, int], None]:
        """``on_tracked`` for one task's collector: the tree is in flight, and its emit is in the ledger."""
        track = self.inflight.track
        emitted = ledger.emitted_tracked

        def on_tracked(root: int, msg_id: Any, weight: int) -> None:
            track(root, task_id, msg_id, weight)
            emitted(msg_id)

        return on_tracked

    @staticmethod
    def untracked(immediate: list[tuple[Any, int]]) -> Callable[[Any, int], None]:
        """``on_untracked_ack`` for one task: queue ``(message id, weight)`` to ack at once."""

        def on_untracked_ack(msg_id: Any, weight: int) -> None:
            immediate.append((msg_id, weight))

        return on_untracked_ack

    def settle(self, results: Iterable[tuple[int, int, float, str]]) -> int:
        """Apply ack results ``(code, root, latency_s, why)``: ``spout.ack`` / ``spout.fail`` for each tree still in flight.

        A failed tree's ``why`` (its fail op's words, ``""`` if none) goes to the source's
        :class:`~streams.kafka.source.FailureNotes` before ``fail``, so a dead letter says it.

        A reset restarts the tree's timeout (``collector.reset_timeout``). Returns how many
        trees were settled; results for trees not in flight are counted in ``inflight.ignored``.
        """
        hist = self.stats.hist("complete_latency")
        now = self.inflight.clock()
        n = 0
        for op, root, _latency, why in results:
            if op == RESULT_RESET:
                self.inflight.reset(root)
                continue
            tree = self.inflight.settle(root)
            if tree is None:
                continue
            task = self.by_task.get(tree.task_id)
            if task is None:
                continue
            n += 1
            if self.on_outcome is not None:  # the outcome first: the spout's answer (a replay, a dead letter) follows it
                self.on_outcome(tree.task_id, tree.msg_id, "acked" if op == RESULT_ACK else "failed")
            if op == RESULT_ACK:
                task.ledger.acked_tree(tree.weight)
                latency = now - tree.emitted_at
                hist.record(latency)
                self.bound.completed(latency, tree.weight)
                if task.collector.hooks:
                    spout_acked(task, tree.msg_id, latency)
                task.spout.ack(tree.msg_id)
            else:
                task.ledger.failed_tree(tree.msg_id, "fail")
                timed_out = why.startswith(ACKER_TIMEOUT)
                if isinstance(task.source, FailureNotes):
                    task.source.note_failure(tree.msg_id, "timeout" if timed_out else "fail", root, why)
                if task.collector.hooks:
                    spout_failed(task, tree.msg_id, now - tree.emitted_at, timed_out)
                task.spout.fail(tree.msg_id)
        return n

    def timeouts(self, timeout_s: float) -> int:
        """Fail every tree older than ``timeout_s`` seconds (Storm: the spout's own timeout); returns how many."""
        expired = self.inflight.expired(timeout_s)
        for tree in expired:
            task = self.by_task.get(tree.task_id)
            self.bound.timed_out()
            if task is not None:
                task.ledger.failed_tree(tree.msg_id, "timeout")
                if isinstance(task.source, FailureNotes):
                    why = f"[{self.stats.component}] no ack within the message timeout of {timeout_s:g} s"
                    task.source.note_failure(tree.msg_id, "timeout", tree.root, why)
                if self.on_outcome is not None:
                    self.on_outcome(tree.task_id, tree.msg_id, "timed_out")
                if task.collector.hooks:
                    spout_failed(task, tree.msg_id, timeout_s, True)
                task.spout.fail(tree.msg_id)
        return len(expired)

    def emit(self, commit: Callable[[], None], only: int | None = None) -> int:
        """One round of ``next_tuple`` calls per task, each task within the pending bound; returns the calls that emitted.

        An untracked emit is acked at once. An at-most-once source that needs its offsets
        committed before it emits more gets ``commit()`` and then ``released()``. ``only``:
        this task id alone (the test kit gives each task its own turn).
        """
        bound = self.bound
        limit = bound.limit
        inflight = self.inflight
        total = 0
        self.held = False
        for task in list(self.by_task.values()) if only is None else [self.by_task[only]]:
            spout = task.spout
            collector = task.collector
            for _ in range(MAX_CALLS_PER_ROUND):
                if inflight.pending(task.task_id) >= limit:  # one call may send a whole tree of records
                    bound.hit()
                    self.held = True
                    break
                before = collector.emitted
                spout.next_tuple()
                if task.immediate:
                    for msg_id, weight in task.immediate:
                        if collector.hooks:
                            spout_acked(task, msg_id, 0.0)
                        spout.ack(msg_id)
                        task.ledger.acked_tree(weight)
                        if self.on_outcome is not None:
                            self.on_outcome(task.task_id, msg_id, "acked")
                    task.immediate.clear()
                if collector.emitted == before:
                    if task.source is not None and task.source.commit_needed:
                        commit()  # at-most-once: commit *before* emitting
                        task.source.released()
                        continue
                    break
                total += 1
        return total


def make_bound(conf: TopologyConfig, topology: Topology, component: str) -> PendingBound:
    """The bound on message ids in flight per task of spout ``component``.

    ``topology.max.spout.pending`` if set (fixed, as in Storm), else an
    :class:`~streams.runtime.pending_bound.AdaptiveBound` aiming at
    ``squall.spout.pending.target.latency.secs`` (never above a fifth of the message timeout).
    """
    if conf.max_spout_pending is not None:
        return FixedBound(conf.max_spout_pending)
    ceiling = max(conf.pending_max, 50)
    target = min(conf.pending_target_latency_secs, conf.message_timeout_secs / 5)
    floor = min(50, ceiling)
    hold = topology.hold()
    hold_s = conf.state_checkpoint_interval_ms / 1000 if hold.checkpointed else 0.0  # acks wait for a checkpoint
    if hold.tuples or hold.seconds:
        # Windows hold tuples until they expire: trees take that much longer, and a count
        # window that cannot fill would stall the spout (each task carries its share). An
        # event-time window holds tuples until newer timestamps come: how many that takes
        # depends on the data, so the spout keeps its ceiling in flight.
        floor = -(-hold.tuples // max(topology.spout_tasks, 1)) + conf.tree_records + 50
        ceiling = max(ceiling, floor)
        if hold.event_time:
            floor = ceiling
        hold_s += hold.seconds
        log.info("[%s] bolts hold %s before acking: pending floor %d, ceiling %d, target %g s past the hold", component, hold, floor, ceiling, target)
    return AdaptiveBound(initial=max(min(conf.pending_initial, ceiling), floor), target_s=target, floor=floor, ceiling=ceiling, hold_s=hold_s)


def spout_acked(task: SpoutTask, msg_id: Any, latency_s: float) -> None:
    """Tell ``task``'s hooks that the tree of ``msg_id`` was fully processed in ``latency_s`` seconds."""
    info = SpoutAckInfo(msg_id, task.task_id, latency_s)
    for hook in task.collector.hooks:
        hook.spout_ack(info)


def spout_failed(task: SpoutTask, msg_id: Any, latency_s: float, timed_out: bool) -> None:
    """Tell ``task``'s hooks that the tree of ``msg_id`` failed (or timed out) ``latency_s`` seconds after its emit."""
    info = SpoutFailInfo(msg_id, task.task_id, latency_s, timed_out)
    for hook in task.collector.hooks:
        hook.spout_fail(info)
