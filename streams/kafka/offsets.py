"""Contiguous-commit offset tracking for one source partition (storm-kafka-client's OffsetManager).

Only the run of finished offsets from the last commit is committed.

The spout sends a run of records as one tree (``squall.spout.tree.records``), so the
tracker keeps **one entry per tree**, not one per record: a tree's records are emitted,
acked and committed with O(1) work (a record's own work was most of the spout's
bookkeeping per record, measured by py-spy on the flights bench). A tree that fails is
split: its records are then replayed, acked and dead-lettered one by one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence


class _Block:
    """The records of one tree (or one record alone), in offset order.

    ``left``: members not finished yet. ``open``: None while the tree is whole (every
    member unfinished until the tree is); after :meth:`OffsetTracker.split`, the set of
    members not finished yet.
    """

    __slots__ = ("left", "members", "open")

    def __init__(self, members: tuple[int, ...]) -> None:
        self.members = members
        self.left = len(members)
        self.open: set[int] | None = None

    def unfinished(self) -> Iterator[int]:
        """The members not finished yet, ascending."""
        if self.left == 0:
            return iter(())
        if self.open is None:
            return iter(self.members)
        return iter(sorted(self.open))


class OffsetTracker:
    """Tracks emitted and finished (acked or dead-lettered) offsets of one partition.

    ``committable`` is the offset to commit: the lowest unfinished emitted offset, or
    one past the highest offset handed to the tracker when everything is finished.
    Offsets must come in increasing order (gaps, e.g. transaction markers, are fine).
    Every offset below :attr:`next` that is not an unfinished member is finished: an
    offset skipped (:meth:`passed`, a record translated to nothing or dead-lettered as
    poison) needs no entry at all.

    >>> t = OffsetTracker(0)
    >>> t.emitted_tree((0, 1, 2), end=4)     # offset 3 was skipped
    >>> t.emitted(4)
    >>> t.finished(4)
    >>> t.committable, t.finished_ranges(5)
    (0, [(3, 5)])
    >>> t.split(0)                           # the tree failed: its records go on alone
    >>> t.finished(0); t.finished(2)
    >>> t.committable, t.finished_ranges(5), t.in_flight
    (1, [(2, 5)], 1)
    >>> t.finished(1)
    >>> t.committable, t.in_flight
    (5, 0)
    """

    __slots__ = ("_blocks", "_index", "_next")

    def __init__(self, start: int) -> None:
        self._blocks: deque[_Block] = deque()
        """Trees in emit (offset) order; finished ones leave from the front."""
        self._index: dict[int, _Block] = {}
        """A whole tree by its first offset; a split tree by each unfinished member."""
        self._next = start

    @property
    def next(self) -> int:
        """One past the highest offset handed to the tracker (the next offset it expects)."""
        return self._next

    def emitted(self, offset: int) -> None:
        """Track ``offset`` as a record of its own (a replay of a tracked offset is ignored)."""
        if offset < self._next:
            return  # a replay of an offset we already track
        block = _Block((offset,))
        self._blocks.append(block)
        self._index[offset] = block
        self._next = offset + 1

    def emitted_tree(self, offsets: Sequence[int], end: int) -> None:
        """Track ``offsets`` (ascending, all at or above :attr:`next`) as one tree; every other offset below ``end`` is finished.

        ``end``: one past the last offset of the run the tree came from, so above every member
        (records of the run that were skipped or dead-lettered are finished).

        Raises:
          ValueError: an offset below :attr:`next` (already handed to the tracker), or ``end``
          not above the last one.
        """
        if offsets:
            if offsets[0] < self._next or end <= offsets[-1]:
                raise ValueError(f"offsets {offsets[0]}..{offsets[-1]} must lie in [{self._next}, {end})")
            block = _Block(tuple(offsets))
            self._blocks.append(block)
            self._index[offsets[0]] = block
        self._next = max(self._next, end)

    def passed(self, offset: int) -> None:
        """``offset`` was handed and is finished at once (skipped, poison, or finished by an earlier life)."""
        if offset >= self._next:
            self._next = offset + 1

    def finished(self, offset: int) -> None:
        """``offset``'s record is done (acked, or given up on): the contiguous prefix may advance.

        A member of a whole tree splits the tree first; an offset not tracked (or already
        finished) is ignored.
        """
        block = self._index.get(offset)
        if block is None:
            block = self._member_of(offset)
            if block is None:
                return
        if block.open is None:
            if len(block.members) == 1:
                del self._index[offset]
                block.left = 0
                self._pop_finished()
                return
            self._split(block)
        assert block.open is not None
        del self._index[offset]
        block.open.discard(offset)
        block.left -= 1
        if block.left == 0:
            self._pop_finished()

    def finished_tree(self, first: int) -> None:
        """The tree whose first offset is ``first`` is done: all its members (those left, if it was split)."""
        block = self._index.pop(first, None)
        if block is None:
            return
        if block.open is not None:
            for off in block.open:
                self._index.pop(off, None)
            block.open.clear()
        block.left = 0
        self._pop_finished()

    def split(self, first: int) -> None:
        """The tree whose first offset is ``first`` failed: from now on its members are tracked, finished and replayed one by one."""
        block = self._index.get(first)
        if block is not None and block.open is None and len(block.members) > 1:
            self._split(block)

    def _split(self, block: _Block) -> None:
        block.open = set(block.members)
        for off in block.members:
            self._index[off] = block

    def _member_of(self, offset: int) -> _Block | None:
        """The whole tree ``offset`` is an unfinished member of (a linear search: only for a record finished before its tree was split)."""
        for block in self._blocks:
            if block.open is None and block.left and block.members[0] <= offset <= block.members[-1] and offset in block.members:
                return block
        return None

    def _pop_finished(self) -> None:
        blocks = self._blocks
        while blocks and blocks[0].left == 0:
            blocks.popleft()

    @property
    def committable(self) -> int:
        """The offset to commit: the first one still in flight, else the next to emit."""
        if not self._blocks:
            return self._next
        head = self._blocks[0]
        return head.members[0] if head.open is None else min(head.open)

    def _unfinished(self) -> Iterator[int]:
        for block in self._blocks:
            yield from block.unfinished()

    def finished_ranges(self, most: int) -> list[tuple[int, int]]:
        """The finished offsets above :attr:`committable`, as at most ``most`` ``[start, end)`` ranges, lowest first.

        What a contiguous commit leaves out: a new life that knows them does not replay them
        (:func:`streams.wire.commits.commit_metadata`). A range may span offsets the
        partition does not have (transaction markers): no life ever reads those.

        >>> t = OffsetTracker(10)
        >>> for off in range(10, 16):
        ...     t.emitted(off)
        >>> for off in (11, 12, 14):
        ...     t.finished(off)
        >>> t.committable, t.finished_ranges(5), t.finished_ranges(1)
        (10, [(11, 13), (14, 15)], [(11, 13)])
        """
        out: list[tuple[int, int]] = []
        if most <= 0:
            return out
        prev = -1
        for off in self._unfinished():
            if prev >= 0 and off > prev + 1:
                out.append((prev + 1, off))
                if len(out) >= most:
                    return out
            prev = off
        if prev >= 0 and prev + 1 < self._next:
            out.append((prev + 1, self._next))
        return out

    @property
    def in_flight(self) -> int:
        """How many tracked offsets are not finished yet."""
        return sum(block.left for block in self._blocks)
