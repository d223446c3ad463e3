"""A drain that hands a transactional bolt's batches to the task's next life, so none replays.

A bolt task of a transactional topology (a CoordinatedBolt) holds every batch it has begun
until the batch finishes there: a BatchBolt's partial aggregate, the end markers it waits
for, a committer's batch until its commit. A worker stopped in the middle lost them, and
each such batch failed and replayed (exactly once still, but a failed tree and a replay per
replaced worker, at every step of a rolling update). Kafka Streams and Flink stop at a
barrier; here no barrier is needed, because the records themselves say which batch they
belong to (:func:`~streams.model.batch.batch_txid`).

Protocol, at a drain of a worker whose topology keeps running (``squall update``, a
rebalance; :func:`service.worker.process.drain`):

1. Each bolt executor with batch-holding tasks stops executing and reports the highest txid
   its tasks have seen; the worker's cutoff ``T`` is the highest of them all (a task may
   need another local task's part of a batch: one cutoff per worker, not per task).
2. From then on a task of the old life *gives*: it executes the tuples of batches ``<= T``
   and tuples outside any batch, and leaves the tuples of later batches unexecuted, while
   it reads on for the rest of its own batches. Its committable input offset stays at the
   first record that held a later batch's tuple (:attr:`TaskHandoff.held_from`).
3. Once none of its tasks holds a batch ``<= T``, the executor stops: it commits, and its
   progress record (:mod:`streams.monitoring.bolt_progress`) carries ``handoff = [T, L]``,
   ``L`` the offset after the last record it read.
4. The new life *takes*: from its committed offset up to ``L`` it executes exactly the
   complement, the tuples of batches ``> T``; from ``L`` on, everything. It carries the
   hand-off in its own progress records until a commit of its own reaches ``L``, so a
   crash in between resumes the same way.

Every tuple is executed by exactly one life and acked once. A batch begins after the
cutoff anywhere in the topology, so the old life never waits for the spouts: it waits for
about one batch's commit. Two workers draining at once can each hold back what the other
needs; the wait is bounded (:data:`HANDOFF_MAX_S`) and what is then still held replays, as
before.

>>> h = TaskHandoff.give(cutoff=7)
>>> from streams.model.tuple import Tuple
>>> old, new = Tuple(["a"], "default", "split", 1, {}, {}, batch=(7, 1)), Tuple(["b"], "default", "split", 1, {}, {}, batch=(8, 1))
>>> h.executes(old, 100), h.executes(new, 101), h.executes(old, 102), h.held_from
(True, False, True, 101)
>>> n = TaskHandoff.take(cutoff=7, until=103)
>>> n.executes(old, 101), n.executes(new, 101), n.executes(old, 103), n.taking
(False, True, True, False)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from streams.model.batch import HoldsBatches, batch_txid
from streams.model.tuple import Tuple

log = logging.getLogger("squall.executor.bolt")

HANDOFF_MAX_S = 20.0
"""How long a drain waits for its batch-holding tasks to finish their batches up to the cutoff (seconds; also bounded by ``squall.shutdown.timeout.secs``)."""

GIVING = 1
TAKING = 2


class TaskHandoff:
    """One task's side of a hand-off (pure; the bolt executor's thread).

    Args:
      mode: :data:`GIVING` (the old life) or :data:`TAKING` (the new one).
      cutoff: the txid ``T``: batches up to it belong to the old life.
      until: taking: the offset ``L`` from which the new life executes everything.
    """

    __slots__ = ("cutoff", "held_from", "mode", "until")

    def __init__(self, mode: int, cutoff: int, until: int = -1) -> None:
        self.mode = mode
        self.cutoff = cutoff
        self.until = until
        self.held_from = -1
        """Giving: the offset of the first record holding a tuple left to the next life (-1: none yet)."""

    @classmethod
    def give(cls, cutoff: int) -> TaskHandoff:
        """The old life's side, from the worker's cutoff ``T``."""
        return cls(GIVING, cutoff)

    @classmethod
    def take(cls, cutoff: int, until: int) -> TaskHandoff:
        """The new life's side, from its last life's progress record ``handoff = [T, L]``."""
        return cls(TAKING, cutoff, until)

    @property
    def taking(self) -> bool:
        """Still in the taking range (records below ``until``)."""
        return self.mode == TAKING

    def executes(self, t: Tuple, offset: int) -> bool:
        """Whether this life executes ``t`` (from input record ``offset``); giving, a tuple left over moves :attr:`held_from`.

        Taking, a record at or past ``until`` ends the range: everything executes from there.
        """
        txid = batch_txid(t)
        if self.mode == GIVING:
            if txid is None or txid <= self.cutoff:
                return True
            if self.held_from < 0 or offset < self.held_from:
                self.held_from = offset
            return False
        if offset >= self.until:
            self.mode = 0
            return True
        return txid is not None and txid > self.cutoff

    def committable(self, offset: int) -> int:
        """The input offset this task may commit for ``offset`` read: giving, never past :attr:`held_from`."""
        if self.mode == GIVING and 0 <= self.held_from < offset:
            return self.held_from
        return offset


@runtime_checkable
class Handing(Protocol):
    """An executor's side of a worker's hand-off, as the drain sees it (:class:`ExecutorHandoff`)."""

    component: str
    holds_batches: bool
    handoff_high: int | None

    def ask_handoff(self) -> None:
        """Step 1: pause and report :attr:`handoff_high`."""
        ...

    def give_handoff(self, cutoff: int) -> None:
        """Step 2: finish the batches up to ``cutoff`` only."""
        ...

    def handoff_done(self) -> bool:
        """Step 3 reached: no task holds a batch up to the cutoff."""
        ...


class HandingTask(Protocol):
    """What :class:`ExecutorHandoff` reads of a bolt task (:class:`streams.runtime.bolt_task.BoltTask`)."""

    handoff: TaskHandoff | None

    @property
    def task_id(self) -> int:
        """The task's global id."""
        ...

    @property
    def bolt(self) -> object:
        """The task's bolt (a :class:`~streams.model.batch.HoldsBatches` takes part)."""
        ...


class ExecutorHandoff:
    """One bolt executor's side of the protocol: steps 1-3 on its own thread (:meth:`round`), asked and given by the drain's.

    Args:
      component, worker: for log lines.
    ``holds_batches`` is set once the executor's tasks are open (any of them a
    :class:`~streams.model.batch.HoldsBatches`). Thread-safe where the drain calls it.
    """

    def __init__(self, component: str, worker: str) -> None:
        self.component = component
        self.worker = worker
        self.holds_batches = False
        self.handoff_high: int | None = None
        """The highest txid its tasks saw, once it paused (step 1)."""
        self.cutoff: int | None = None
        """The worker's cutoff ``T``, given by the drain once every executor reported (step 2)."""
        self.asked = threading.Event()
        self.done = threading.Event()
        self.phase = 0
        """0: running; 1: paused, high reported; 2: giving; 3: handed off (reads nothing more)."""

    # -- the drain's side (Handing) --------------------------------------------------
    def ask_handoff(self) -> None:
        """Step 1 (any thread): pause at the next round and report :attr:`handoff_high`."""
        self.asked.set()

    def give_handoff(self, cutoff: int) -> None:
        """Step 2 (any thread): execute batches up to ``cutoff`` only, until none is held."""
        self.cutoff = cutoff

    def handoff_done(self) -> bool:
        """Step 3 reached (any thread)."""
        return self.done.is_set()

    # -- the executor's side -----------------------------------------------------------
    @property
    def active(self) -> bool:
        """A hand-off was asked for: the executor calls :meth:`round` every round."""
        return self.phase != 0 or self.asked.is_set()

    def round(self, tasks: Iterable[HandingTask]) -> bool:
        """This round's part of the protocol, on the executor's thread; True while it must not read input (paused, or handed off)."""
        mine = [t for t in tasks if isinstance(t.bolt, HoldsBatches)]
        if self.phase == 0:
            if not self.asked.is_set():
                return False
            if any(t.handoff is not None for t in mine):
                # still taking over from its last life: a second hand-off on top is not supported;
                # what it holds replays, as a stop without a hand-off does
                self.phase = 3
                self.done.set()
                return True
            self.handoff_high = max((t.bolt.highest_txid() for t in mine if isinstance(t.bolt, HoldsBatches)), default=-1)
            self.phase = 1
            return True
        if self.phase == 1:
            cutoff = self.cutoff
            if cutoff is None:
                return True
            for t in mine:
                t.handoff = TaskHandoff.give(cutoff)
            self.phase = 2
            log.info("[%s] %s drains: finishing its batches up to txid %d, leaving later ones to the next life", self.component, self.worker, cutoff)
            return False
        if self.phase == 2:
            cutoff = self.cutoff
            assert cutoff is not None
            if any(isinstance(t.bolt, HoldsBatches) and t.bolt.holds_batches_through(cutoff) for t in mine):
                return False
            self.phase = 3
            left = {t.task_id: t.handoff.held_from for t in mine if t.handoff is not None and t.handoff.held_from >= 0}
            log.info(
                "[%s] %s finished its batches up to txid %d; the next life starts at %s", self.component, self.worker, cutoff, left or "where this one stopped"
            )
            self.done.set()
        return True


class WorkerHandoff:
    """Steps 1-3 of the protocol across one worker's executors, driven by its drain (one thread).

    Args:
      executors: the worker's bolt executors; those whose tasks hold batches take part.
      now: monotonic seconds at the start; the hand-off gives up :data:`HANDOFF_MAX_S` later.

    >>> class E:
    ...     component, holds_batches, handoff_high, cutoff, done = "count", True, None, None, False
    ...     def ask_handoff(self): pass
    ...     def give_handoff(self, cutoff): self.cutoff = cutoff
    ...     def handoff_done(self): return self.done
    >>> e = E(); w = WorkerHandoff([e], now=0.0)
    >>> w.step(0.1), w.cutoff  # its thread has not paused yet
    (False, None)
    >>> e.handoff_high = 41; w.step(0.2), e.cutoff  # paused at 41: the cutoff is given
    (False, 41)
    >>> e.done = True; w.step(0.3), w.gave_up  # no batch up to 41 held any more
    (True, False)
    """

    def __init__(self, executors: Sequence[Handing], now: float, max_s: float = HANDOFF_MAX_S) -> None:
        self.executors = [e for e in executors if e.holds_batches]
        self.deadline = now + max_s
        self.cutoff: int | None = None
        """The worker's cutoff ``T`` once every executor reported."""
        self.gave_up = False
        """The wait ran past :data:`HANDOFF_MAX_S`: what is still held replays."""
        for e in self.executors:
            e.ask_handoff()

    def step(self, now: float) -> bool:
        """Advance; True once every executor handed off (or the hand-off gave up)."""
        if not self.executors:
            return True
        if now >= self.deadline:
            self.gave_up = True
            return True
        if self.cutoff is None:
            highs = [e.handoff_high for e in self.executors]
            if any(h is None for h in highs):
                return False
            self.cutoff = max(h for h in highs if h is not None)
            for e in self.executors:
                e.give_handoff(self.cutoff)
        return all(e.handoff_done() for e in self.executors)
