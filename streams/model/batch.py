"""Transactional topologies (seed 003; Storm's transactional topologies and Trident): the programming model.

A transactional spout (:mod:`streams.transactional.spout`) cuts its input into batches, each
with a txid that only grows. A batch is one tuple tree. Its tuples are processed in parallel
with other batches (the *processing* phase); committer bolts then commit the batches
strictly in txid order (the *commit* phase), writing to txid-aware state
(:mod:`streams.state`), so a replayed batch is never counted twice.

* :class:`BatchBolt` (Storm ``IBatchBolt``): a fresh copy per batch; ``execute`` per tuple,
  ``finish_batch`` once every tuple of the batch has reached this task.
* A committer bolt (Storm ``ICommitter``): a BatchBolt that also inherits :class:`Committer`,
  or any bolt added with ``TopologyBuilder.set_committer_bolt``. Its ``finish_batch`` runs
  only in the commit phase, in txid order.
* Ordinary bolts (``Bolt``, ``BasicBolt``) may sit in a transactional topology too: their
  emits inherit the batch of the tuple they are anchored to. They must emit from
  ``execute`` only (not later), because the batch moves on once their input is complete.

When does an ordinary BatchBolt downstream of a committer run (seed point 14)? In the commit
phase: the committer emits in its ``finish_batch``, which runs only at commit, so
everything downstream of it (its ``execute`` and its ``finish_batch``) runs then too.

Example (a committer that writes word counts; ``state`` is a :class:`streams.state.State`)::

    >>> from collections import Counter
    >>> class CommitCounts(BatchBolt, Committer):
    ...     def prepare(self, conf, context, collector, attempt):
    ...         super().prepare(conf, context, collector, attempt)
    ...         self.counts = Counter()
    ...     def execute(self, tuple):
    ...         self.counts[tuple[0]] += 1
    ...     def finish_batch(self):
    ...         pass  # e.g. self.state.apply(self.attempt.txid, self.counts.items())
    >>> is_committer(CommitCounts()), BatchAttempt(3, 1).txid
    (True, 3)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from streams.model.component import Component
from streams.model.tuple import DEFAULT_STREAM

if TYPE_CHECKING:
    from streams.model.context import TopologyContext
    from streams.model.tuple import Tuple

BATCH_END_STREAM = "__batch_end"
"""A direct stream every component of a transactional topology declares: ``[txid, attempt,
count]`` from each task to each task of each subscriber, after its part of the batch
(Storm's CoordinatedBolt coordination stream). ``count`` is how many of the batch's tuples
that task sent to that target."""

COMMIT_STREAM = "__commit"
"""The transactional spout's commit tuples, ``[txid, attempt]``, to every task of every
committer bolt (all grouping)."""

BATCH_END_FIELDS = ("txid", "attempt", "count")
COMMIT_FIELDS = ("txid", "attempt")
SYSTEM_STREAMS = frozenset({BATCH_END_STREAM, COMMIT_STREAM})


def batch_txid(t: Tuple) -> int | None:
    """The txid of the batch ``t`` belongs to: a data tuple's, or an end marker's or commit's first value.

    None outside any batch (a tick, a plain topology's tuple).

    >>> from streams.model.tuple import Tuple
    >>> batch_txid(Tuple(["w"], "default", "split", 3, {}, {}, batch=(7, 1)))
    7
    >>> batch_txid(Tuple([8, 1, 4], BATCH_END_STREAM, "split", 3, {}, {})), batch_txid(Tuple([9, 2], COMMIT_STREAM, "lines", 0, {}, {}))
    (8, 9)
    >>> batch_txid(Tuple(["w"], "default", "split", 3, {}, {})) is None
    True
    """
    if t.batch is not None:
        return t.batch[0]
    if t.stream in SYSTEM_STREAMS:
        txid = t.values[0]
        return txid if type(txid) is int else None
    return None


@runtime_checkable
class HoldsBatches(Protocol):
    """A bolt that holds batches between their tuples and their finish (the CoordinatedBolt of a transactional topology).

    The bolt executor asks it at a drain, to hand its batches to the task's next life
    (:mod:`streams.runtime.handoff`). Both are called on the executor's thread.
    """

    def highest_txid(self) -> int:
        """The highest txid this task has seen a tuple of (-1: none)."""
        ...

    def holds_batches_through(self, txid: int) -> bool:
        """True while this task holds a batch with a txid ``<= txid`` that has not finished here."""
        ...


class BatchAttempt(NamedTuple):
    """One emission of a batch (Storm's ``TransactionAttempt``).

    ``txid`` only grows from batch to batch; ``attempt`` grows with every replay of the same
    txid.
    """

    txid: int
    attempt: int


class BatchOutputCollector:
    """What a :class:`BatchBolt` emits with (Storm's ``BatchOutputCollector``).

    Every emit is anchored for it, to the tuple being executed or, in ``finish_batch``, to
    the batch's coordination tuples. Not thread-safe.
    """

    def __init__(self, emit: Any, emit_direct: Any) -> None:
        self._emit = emit
        self._emit_direct = emit_direct

    def emit(self, values: list[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``values`` on ``stream``; returns the global target tasks."""
        return list(self._emit(values, stream))

    def emit_direct(self, task: int, values: list[Any], stream: str = DEFAULT_STREAM) -> None:
        """Emit to one global ``task`` on a direct stream."""
        self._emit_direct(task, values, stream)


class BatchBolt(Component):
    """Processes one batch (Storm's ``IBatchBolt``).

    A fresh copy of the prototype is made for every batch a task sees, so state on ``self``
    is the batch's.

    Lifecycle per batch and task: ``prepare(conf, context, collector, attempt)``, then
    ``execute(tuple)`` for each of the batch's tuples that reach this task (maybe none),
    then ``finish_batch()`` once all have arrived (a committer: at the batch's commit).
    Raising :class:`~streams.exceptions.FailedException` (or any exception) in ``execute`` or
    ``finish_batch`` fails the batch; it is replayed under the same txid. Every call comes
    from the executor's thread.
    """

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: BatchOutputCollector, attempt: BatchAttempt) -> None:
        """Called once per batch copy, before its first ``execute``."""
        self.collector = collector
        self.attempt = attempt
        self.context = context

    def execute(self, tuple: Tuple) -> None:  # noqa: A002 - Storm's name
        """One tuple of the batch (no ack: the runtime acks it after this returns)."""
        raise NotImplementedError

    def finish_batch(self) -> None:
        """Every tuple of the batch has reached this task (a committer: and it commits now)."""


class Committer:
    """Marks a BatchBolt as a committer bolt (Storm's ``ICommitter``): its ``finish_batch`` runs only in the commit phase, strictly in txid order."""


def is_committer(obj: Any) -> bool:
    """True for a bolt marked with :class:`Committer`."""
    return isinstance(obj, Committer)
