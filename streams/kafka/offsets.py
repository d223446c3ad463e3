"""Contiguous-commit offset tracking for one source partition (storm-kafka-client's OffsetManager).

Only the run of finished offsets from the last commit is committed.
"""

from __future__ import annotations

from collections import deque


class OffsetTracker:
    """Tracks emitted and finished (acked or dead-lettered) offsets of one partition.

    ``committable`` is the offset to commit: the lowest unfinished emitted offset, or
    one past the highest emitted offset when everything is finished. Offsets must be
    emitted in increasing order (gaps, e.g. transaction markers, are fine).
    """

    __slots__ = ("_done", "_inflight", "_next")

    def __init__(self, start: int) -> None:
        self._inflight: deque[int] = deque()
        self._done: set[int] = set()
        self._next = start

    def emitted(self, offset: int) -> None:
        """Track ``offset`` as emitted (a replay of a tracked offset is ignored)."""
        if offset < self._next:
            return  # a replay of an offset we already track
        self._inflight.append(offset)
        self._next = offset + 1

    def finished(self, offset: int) -> None:
        """``offset``'s tree is done (acked, or given up on): the contiguous prefix may advance."""
        inflight = self._inflight
        if not inflight or offset < inflight[0]:
            return
        self._done.add(offset)
        while inflight and inflight[0] in self._done:
            self._done.discard(inflight.popleft())

    @property
    def committable(self) -> int:
        """The offset to commit: the first one still in flight, else the next to emit."""
        return self._inflight[0] if self._inflight else self._next

    def finished_ranges(self, most: int) -> list[tuple[int, int]]:
        """The finished offsets above :attr:`committable`, as at most ``most`` ``[start, end)`` ranges, lowest first.

        What a contiguous commit leaves out: a new life that knows them does not replay them
        (:func:`streams.wire.commits.commit_metadata`). Each range is a run of consecutive
        offsets (gaps in the partition, e.g. transaction markers, split a run).

        >>> t = OffsetTracker(10)
        >>> for off in range(10, 16):
        ...     t.emitted(off)
        >>> for off in (11, 12, 14):
        ...     t.finished(off)
        >>> t.committable, t.finished_ranges(5), t.finished_ranges(1)
        (10, [(11, 13), (14, 15)], [(11, 13)])
        """
        out: list[tuple[int, int]] = []
        if not self._done or most <= 0:
            return out
        start = end = -1
        for off in sorted(self._done):
            if off == end:
                end += 1
                continue
            if start >= 0:
                out.append((start, end))
                if len(out) >= most:
                    return out
            start, end = off, off + 1
        out.append((start, end))
        return out

    @property
    def in_flight(self) -> int:
        """How many tracked offsets are not finished yet."""
        return len(self._inflight)
