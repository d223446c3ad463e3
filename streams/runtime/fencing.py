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

What it cannot see: a zombie's record that lands in a partition before its successor wrote
anything there. The worker's lease (:mod:`streams.runtime.lease`) keeps that window to the
writes in flight at a cut.

>>> fence = EpochFence()
>>> [fence.admit(0, 7, e) for e in (100, 100, 250, 100, 250)]
[True, True, True, False, True]
>>> fence.admit(1, 7, 100), fence.dropped, fence.highest_of(0, 7)
(True, 1, 250)
"""

from __future__ import annotations

import time
from collections.abc import Callable


def new_epoch(clock: Callable[[], float] = time.time) -> int:
    """An epoch for a worker started now, outside ``squall serve``: ``clock()`` in milliseconds.

    >>> new_epoch(lambda: 1_700_000_000.25)
    1700000000250
    """
    return int(clock() * 1000)


class EpochFence:
    """The highest epoch seen per ``(partition, sending task)`` of one reader; older ones are refused.

    Pure and not thread-safe: one per executor, called from its loop. ``dropped``: records
    refused so far.
    """

    __slots__ = ("_highest", "dropped")

    def __init__(self) -> None:
        self._highest: dict[int, dict[int, int]] = {}
        self.dropped = 0

    def admit(self, partition: int, sender: int, epoch: int) -> bool:
        """Whether a record of ``sender``'s life ``epoch``, read from ``partition``, is taken (True) or fenced (False)."""
        seen = self._highest.get(partition)
        if seen is None:
            seen = self._highest[partition] = {}
        top = seen.get(sender)
        if top == epoch:  # the common case: the sender's current life
            return True
        if top is None or epoch > top:
            seen[sender] = epoch
            return True
        self.dropped += 1
        return False

    def highest_of(self, partition: int, sender: int) -> int | None:
        """The newest epoch of ``sender`` seen in ``partition``, or None."""
        return self._highest.get(partition, {}).get(sender)
