"""A compact hash table for pending trees: open addressing over ``array('Q')`` columns.

Why: a Python dict of tuples costs ~300 bytes per pending tree; this costs 32 bytes per
slot at a load factor kept in (0.25, 0.5], so 64-128 bytes per tree (Storm's acker: 20).

Layout per slot (all unsigned 64-bit):
  * ``keys``  -- root id; 0 marks an empty slot (root ids are never 0).
  * ``vals``  -- the ack val.
  * ``meta``  -- ``(spout_task + 1) | (start_ms << 16)``; task 0 means "unknown",
    so spout task ids must be < 65535; ``start_ms`` is milliseconds (clock * 1000).
  * ``aux``   -- ``(tag + 1) << 2 | failed << 1 | persisted``: the source tag of the last
    op applied (-1: none), whether a fail arrived before the init (the init then fails the
    tree at once), and whether the entry has a live changelog record (:mod:`acker.durable`).

Every encoding is packed and unpacked here, behind the static helpers below.

Linear probing from ``root & mask`` (root ids are random, so no further hashing) and
backward-shift deletion (no tombstones). O(1) expected per operation.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

_NO_TASK = 0
_MAX_TASK = 0xFFFE
_PERSISTED = 1
_FAILED = 2


def _zeros(n: int) -> array[int]:
    return array("Q", bytes(8 * n))


class CompactTable:
    """The acker's pending trees in parallel arrays with open addressing (about 67 bytes a tree; Storm's RotatingMap, compacted)."""

    __slots__ = ("aux", "keys", "mask", "meta", "size", "vals")

    def __init__(self, capacity: int = 16) -> None:
        cap = 16
        while cap < capacity:
            cap *= 2
        self._alloc(cap)
        self.size = 0

    def _alloc(self, cap: int) -> None:
        self.keys = _zeros(cap)
        self.vals = _zeros(cap)
        self.meta = _zeros(cap)
        self.aux = _zeros(cap)
        self.mask = cap - 1

    def __len__(self) -> int:
        return self.size

    @property
    def nbytes(self) -> int:
        """Bytes held by the columns."""
        return 4 * 8 * (self.mask + 1)

    @staticmethod
    def pack_meta(task: int | None, start: float) -> int:
        """``task`` (or None: no init yet) and ``start`` (Unix seconds, ms resolution) packed into one int."""
        if task is None:
            t = _NO_TASK
        elif 0 <= task <= _MAX_TASK - 1:
            t = task + 1
        else:
            raise ValueError(f"spout task {task} out of range 0..{_MAX_TASK - 1}")
        return t | (max(0, int(start * 1000)) << 16)

    @staticmethod
    def with_task(meta: int, task: int) -> int:
        """``meta`` with its spout task set to ``task`` (start time kept).

        Raises ValueError for a task outside ``0 .. 65533``.
        """
        return (meta & ~0xFFFF) | (CompactTable.pack_meta(task, 0.0) & 0xFFFF)

    @staticmethod
    def pack_aux(tag: int, persisted: bool, failed: bool = False) -> int:
        """Encode the source ``tag`` (-1 .. 2**62 - 2) and the two flags."""
        return ((tag + 1) << 2) | (_FAILED if failed else 0) | (_PERSISTED if persisted else 0)

    @staticmethod
    def tag_of(aux: int) -> int:
        """The source tag in ``aux`` (-1: no tagged op yet)."""
        return (aux >> 2) - 1

    @staticmethod
    def persisted_of(aux: int) -> bool:
        """Whether the tree is in the changelog already (a flag of ``aux``)."""
        return bool(aux & _PERSISTED)

    @staticmethod
    def failed_of(aux: int) -> bool:
        """Whether the tree has failed (a flag of ``aux``)."""
        return bool(aux & _FAILED)

    @staticmethod
    def with_tag(aux: int, tag: int) -> int:
        """``aux`` with its tag replaced by ``tag`` (flags kept)."""
        return ((tag + 1) << 2) | (aux & (_FAILED | _PERSISTED))

    @staticmethod
    def persisted(aux: int) -> int:
        """``aux`` with the persisted flag set."""
        return aux | _PERSISTED

    @staticmethod
    def failed(aux: int) -> int:
        """``aux`` with the failed flag set."""
        return aux | _FAILED

    @staticmethod
    def task_of(meta: int) -> int | None:
        """The spout task packed in ``meta`` (None: no init seen yet)."""
        t = meta & 0xFFFF
        return None if t == _NO_TASK else t - 1

    @staticmethod
    def start_of(meta: int) -> float:
        """The start time packed in ``meta`` (Unix seconds)."""
        return (meta >> 16) / 1000.0

    def find(self, root: int) -> int:
        """The slot of ``root``, or -1."""
        keys = self.keys
        mask = self.mask
        i = root & mask
        while True:
            k = keys[i]
            if k == root:
                return i
            if k == 0:
                return -1
            i = (i + 1) & mask

    def insert(self, root: int, val: int, meta: int, aux: int) -> int:
        """Insert a root that is not present; returns its slot."""
        if (self.size + 1) * 2 > self.mask + 1:
            self._grow()
        keys = self.keys
        mask = self.mask
        i = root & mask
        while keys[i] != 0:
            i = (i + 1) & mask
        keys[i] = root
        self.vals[i] = val
        self.meta[i] = meta
        self.aux[i] = aux
        self.size += 1
        return i

    def delete_slot(self, i: int) -> None:
        """Remove the entry at slot ``i`` (backward-shift deletion)."""
        keys, vals, meta, aux = self.keys, self.vals, self.meta, self.aux
        mask = self.mask
        j = i
        while True:
            j = (j + 1) & mask
            k = keys[j]
            if k == 0:
                break
            home = k & mask
            # keep k at j if its home lies cyclically in (i, j]
            if (i < j and i < home <= j) or (j < i and (home > i or home <= j)):
                continue
            keys[i] = k
            vals[i] = vals[j]
            meta[i] = meta[j]
            aux[i] = aux[j]
            i = j
        keys[i] = 0
        vals[i] = 0
        meta[i] = 0
        aux[i] = 0
        self.size -= 1

    def _grow(self) -> None:
        old = (self.keys, self.vals, self.meta, self.aux)
        self._alloc(2 * (self.mask + 1))
        keys = self.keys
        mask = self.mask
        for s, root in enumerate(old[0]):
            if root:
                i = root & mask
                while keys[i] != 0:
                    i = (i + 1) & mask
                keys[i] = root
                self.vals[i] = old[1][s]
                self.meta[i] = old[2][s]
                self.aux[i] = old[3][s]

    def items(self) -> Iterator[tuple[int, int, int, int]]:
        """``(root, val, meta, aux)`` for every entry."""
        for s, root in enumerate(self.keys):
            if root:
                yield root, self.vals[s], self.meta[s], self.aux[s]
