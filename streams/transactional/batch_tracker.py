"""When has a batch fully reached a task? Storm's CoordinatedBolt bookkeeping (pure).

Every upstream task sends each task of its subscribers one end marker per batch,
``[txid, attempt, count]``, after the batch's tuples (``count``: how many it sent to that
task). A task's input for a batch is complete once it has a marker from every upstream task
and has received exactly the announced number of tuples from each (markers and tuples may
arrive in any order). A committer's input is complete the same way, and it finishes only
once the batch's commit tuple has arrived too.

Attempts: a replayed batch has the same txid and a larger attempt. A tuple of a newer
attempt supersedes what a task holds for an older one; a tuple of an older attempt, or of
an attempt already finished here, is *stale* and only acked. So is a tuple that arrives
after the task's input for its batch was complete (a committer waiting for its commit):
an upstream task that restarted sent it again, and counting it would count it twice.

>>> t = BatchTracker(upstream=frozenset({0, 1}), committer=False)
>>> b = t.data(7, 1, source_task=0)
>>> b = t.marker(7, 1, source_task=0, count=1, tuple="m0")
>>> t.complete(b)
False
>>> b = t.marker(7, 1, source_task=1, count=0, tuple="m1")
>>> t.complete(b), b.markers
(True, ['m0', 'm1'])
>>> t.finished(b); t.data(7, 1, source_task=0) is None  # late duplicate: stale
True
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TaskBatch:
    """One batch attempt as one task sees it.

    ``received``/``expected``: tuples per upstream global task (received so far; announced
    by its marker). ``markers``: the marker tuples, held until the batch finishes here (or,
    at a committer, until its input is complete). ``commit``: a committer's commit tuple.
    ``bolt``: the BatchBolt copy for this batch. ``sent``: tuples this task emitted in the
    batch per global target task (the counts of its own markers). ``input_done``: the
    input was complete (a committer may still wait for its commit).
    """

    txid: int
    attempt: int
    received: dict[int, int] = field(default_factory=dict)
    expected: dict[int, int] = field(default_factory=dict)
    markers: list[Any] = field(default_factory=list)
    commit: Any = None
    bolt: Any = None
    sent: dict[int, int] = field(default_factory=dict)
    input_done: bool = False
    epochs: dict[int, int] = field(default_factory=dict)
    """The life (epoch) of each upstream task whose tuples this attempt received."""
    broken: bool = False
    """An upstream task restarted mid-batch and sent some of it again: this attempt can no
    longer be counted here, so it is failed (and replayed under a new attempt)."""


class BatchTracker:
    """The batches in progress at one task.

    Args:
      upstream: the global task ids that send this task markers (every task of every
        component it subscribes to).
      committer: whether this task is a committer's (finishes at the commit).
      remember: how many finished ``(txid, attempt)`` pairs to remember, so late
        duplicates are recognised as stale.
    Not thread-safe (one executor thread).
    """

    def __init__(self, upstream: frozenset[int], committer: bool, remember: int = 4096) -> None:
        self.upstream = upstream
        self.committer = committer
        self.remember = remember
        self.batches: dict[int, TaskBatch] = {}
        self.superseded: list[TaskBatch] = []
        """Batches dropped because a newer attempt arrived; the caller takes and settles them."""
        self._finished: OrderedDict[int, int] = OrderedDict()

    def batch(self, txid: int, attempt: int) -> TaskBatch | None:
        """The record of ``(txid, attempt)``, created if new; None when stale."""
        done = self._finished.get(txid)
        if done is not None and attempt <= done:
            return None
        b = self.batches.get(txid)
        if b is not None:
            if attempt == b.attempt:
                return b
            if attempt < b.attempt:
                return None
            self.superseded.append(b)
        b = self.batches[txid] = TaskBatch(txid, attempt)
        return b

    def data(self, txid: int, attempt: int, source_task: int, epoch: int = 0) -> TaskBatch | None:
        """A data tuple of the batch arrived from ``source_task`` (in its life ``epoch``).

        None when it is stale, or arrives after the input was complete: a duplicate (an
        upstream task that restarted re-sent what it had sent), which must not reach the
        bolt. A batch whose upstream task changed lives mid-batch comes back ``broken``.
        """
        b = self.batches.get(txid)
        if b is None or b.attempt != attempt:  # a new attempt here, or a stale one
            b = self.batch(txid, attempt)
            if b is None:
                return None
        if b.input_done:
            return None
        # the usual case first, inline: a sender already seen, in the same life
        if (not b.broken and b.epochs.get(source_task) == epoch) or self._same_life(b, source_task, epoch):
            b.received[source_task] = b.received.get(source_task, 0) + 1
        return b

    def marker(self, txid: int, attempt: int, source_task: int, count: int, tuple: Any, epoch: int = 0) -> TaskBatch | None:  # noqa: A002
        """``source_task``'s end marker: it sent this task ``count`` tuples of the batch.

        None when stale or after the input was complete (a duplicate); maybe ``broken``.
        """
        b = self.batch(txid, attempt)
        if b is None or b.input_done:
            return None
        if self._same_life(b, source_task, epoch):
            b.expected[source_task] = count
            b.markers.append(tuple)
        return b

    @staticmethod
    def _same_life(b: TaskBatch, source_task: int, epoch: int) -> bool:
        if b.epochs.setdefault(source_task, epoch) != epoch:
            b.broken = True
        return not b.broken

    def commit(self, txid: int, attempt: int, tuple: Any) -> TaskBatch | None:  # noqa: A002
        """A committer's commit tuple.

        None when this task knows nothing of the batch: a stale attempt, or one whose
        processing this task lost (it restarted).
        """
        done = self._finished.get(txid)
        if done is not None and attempt <= done:
            return None
        b = self.batches.get(txid)
        if b is None or b.attempt != attempt:
            return None
        b.commit = tuple
        return b

    def is_duplicate_commit(self, txid: int, attempt: int) -> bool:
        """True if ``(txid, attempt)`` already finished here (a commit delivered twice)."""
        done = self._finished.get(txid)
        return done is not None and attempt <= done

    def complete(self, b: TaskBatch) -> bool:
        """Every upstream task's marker is in and every announced tuple has arrived."""
        if len(b.expected) < len(self.upstream):
            return False
        return all(b.received.get(t, 0) == n for t, n in b.expected.items())

    def ready(self, b: TaskBatch) -> bool:
        """The batch may finish here now (a committer also needs its commit tuple)."""
        return b.input_done and (not self.committer or b.commit is not None)

    def highest_txid(self) -> int:
        """The highest txid this task holds or remembers as finished (-1: none).

        >>> t = BatchTracker(upstream=frozenset({0}), committer=False)
        >>> t.highest_txid(), t.data(4, 1, 0).txid, t.highest_txid()
        (-1, 4, 4)
        """
        return max(max(self.batches, default=-1), max(self._finished, default=-1))

    def holds_through(self, txid: int) -> bool:
        """True while a batch with a txid ``<= txid`` is held here (not finished, or superseded and not yet settled).

        >>> t = BatchTracker(upstream=frozenset({0}), committer=False)
        >>> b = t.data(4, 1, 0); t.holds_through(3), t.holds_through(4)
        (False, True)
        >>> t.finished(b); t.holds_through(4)
        False
        """
        return any(b.txid <= txid for b in self.batches.values()) or any(b.txid <= txid for b in self.superseded)

    def finished(self, b: TaskBatch) -> None:
        """The batch finished here: forget it, remember it as done."""
        if self.batches.get(b.txid) is b:
            del self.batches[b.txid]
        self._finished[b.txid] = max(b.attempt, self._finished.get(b.txid, 0))
        self._finished.move_to_end(b.txid)
        while len(self._finished) > self.remember:
            self._finished.popitem(last=False)
