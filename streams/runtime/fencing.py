"""Fencing what an older owner of a task writes late: the sender's epoch, checked by the consumer.

Every tuple and every acker record carries its sending task's *epoch*: the claim epoch of the
worker that runs it (milliseconds; under ``squall serve`` the supervisor gives each worker
one larger than every earlier claim on any of its tasks, :meth:`service.control.claims.ClaimBook.next_epoch`;
elsewhere the worker's start time). It is Kafka's producer epoch and leader epoch, checked
by whoever reads the partition.

In a normal handover, the old owner drains its outputs and exits before the new one may start
(:mod:`service.control.claims`), so in every partition the old epoch's records come before the new
one's. A record from an *older* epoch after one from a newer epoch of the same sending task
was written by a worker that was replaced while it was cut off (its lease lapsed, or its
writes were in flight at the cut and landed after the heal): it is dropped, failed (so its
tree is replayed at once, not after the message timeout) and counted.

**Epoch markers** close the two gaps the check alone left (issue 52). A new life writes an
epoch marker (:func:`streams.wire.codec.encode_marker`; on the acker topic, an empty record
from it) to every partition it may write, and has them confirmed before it writes anything
else: a zombie's record that lands in a partition after the new life started lands after the
marker, even where the new life has written nothing yet. And a reader keeps what it learned:
each task's progress record carries its partition's fence (:meth:`EpochFence.entries`), and a
new life of the reader starts from it (:meth:`EpochFence.seed`), so a reader restarted past
the marker still refuses the late record.

>>> fence = EpochFence()
>>> [fence.admit(0, 7, e, off) for off, e in enumerate((100, 100, 250, 100, 250))]
[True, True, True, False, True]
>>> fence.admit(1, 7, 100, 0), fence.dropped, fence.highest_of(0, 7)
(True, 1, 250)
>>> fence.mark(1, 7, 300, 5); fence.admit(1, 7, 250, 6)  # a marker, then a zombie's record
False
>>> restarted = EpochFence(); restarted.seed(1, fence.entries(1, committed=6), start=6); restarted.admit(1, 7, 250, 7)
False
"""

from __future__ import annotations

import time
from collections.abc import Callable

FENCE_LOG_LIMIT = 1000
"""A reader logs each record it fences (``fenced TOPIC[P]@OFFSET: ...``), the first this many per executor life; all are counted."""


def new_epoch(clock: Callable[[], float] = time.time) -> int:
    """An epoch for a worker started now, outside ``squall serve``: ``clock()`` in milliseconds.

    >>> new_epoch(lambda: 1_700_000_000.25)
    1700000000250
    """
    return int(clock() * 1000)


class EpochFence:
    """The newest epoch seen per ``(partition, sending task)`` of one reader, and where it was first seen; older ones are refused.

    Pure and not thread-safe: one per executor, called from its loop. ``dropped``: records
    refused so far. For each sender it keeps its lives, each with the offset of its first
    record (or marker) in the partition: a reader that starts again at offset ``C`` knows
    what it had learned before ``C`` (:meth:`seed`). :meth:`entries` drops the lives older
    than the newest one first seen before the reader's commit.
    """

    __slots__ = ("_highest", "_since", "dropped")

    def __init__(self) -> None:
        self._highest: dict[int, dict[int, int]] = {}
        self._since: dict[int, dict[int, list[tuple[int, int]]]] = {}
        self.dropped = 0

    def admit(self, partition: int, sender: int, epoch: int, offset: int = -1) -> bool:
        """Whether a record of ``sender``'s life ``epoch``, read at ``partition``'s ``offset``, is taken (True) or fenced (False)."""
        seen = self._highest.get(partition)
        if seen is None:
            seen = self._highest[partition] = {}
        top = seen.get(sender)
        if top == epoch:  # the common case: the sender's current life
            return True
        if top is None or epoch > top:
            self._raise(partition, sender, epoch, offset)
            return True
        self.dropped += 1
        return False

    def mark(self, partition: int, sender: int, epoch: int, offset: int) -> None:
        """An epoch marker of ``sender``'s life ``epoch`` at ``offset``: from here on, older lives of it are refused."""
        top = self._highest.get(partition, {}).get(sender)
        if top is None or epoch > top:
            self._raise(partition, sender, epoch, offset)

    def _raise(self, partition: int, sender: int, epoch: int, offset: int) -> None:
        self._highest.setdefault(partition, {})[sender] = epoch
        self._since.setdefault(partition, {}).setdefault(sender, []).append((epoch, offset))

    def highest_of(self, partition: int, sender: int) -> int | None:
        """The newest epoch of ``sender`` seen in ``partition``, or None."""
        return self._highest.get(partition, {}).get(sender)

    def entries(self, partition: int, committed: int) -> list[tuple[int, int, int]]:
        """What this reader learned of ``partition``, for a progress record naming commit ``committed``: ``(sender, epoch, first offset)``.

        Per sender, the newest life first seen before ``committed`` and every life since
        (older ones are dropped here: no later start can need them).
        """
        out: list[tuple[int, int, int]] = []
        for sender, lives in sorted(self._since.get(partition, {}).items()):
            before = [i for i, (_, off) in enumerate(lives) if 0 <= off < committed]
            if before and before[-1] > 0:
                del lives[: before[-1]]
            out.extend((sender, epoch, off) for epoch, off in lives)
        return out

    def seed(self, partition: int, entries: list[tuple[int, int, int]] | tuple[tuple[int, int, int], ...], start: int) -> None:
        """Start from a last life's :meth:`entries` when reading ``partition`` from ``start``: what was learned before ``start`` holds.

        Lives first seen at ``start`` or later are left out: this reader sees them again.
        """
        for sender, epoch, off in sorted(entries, key=lambda e: (e[2], e[1])):
            if 0 <= off < start:
                self.mark(partition, sender, epoch, off)
