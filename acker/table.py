"""A compact hash table for pending trees: dense ``array`` columns behind a 4-byte index.

Why: a Python dict of tuples costs ~300 bytes per pending tree. Storm's acker holds about
20 (a root id, an ack val and a spout task). This table holds 30 bytes of columns per tree
plus a 4-byte index slot at a load factor kept in (0.53, 0.8]: 35-40 bytes per tree,
measured by ``python -m bench acker``.

Layout:
  * the dense columns, one row per tree, rows ``0 .. size-1`` with no holes (a delete
    moves the last row into the hole):

    - ``keys``   (``Q``, 8 bytes) -- the root id; root ids are never 0;
    - ``vals``   (``Q``, 8 bytes) -- the ack val;
    - ``aux``    (``Q``, 8 bytes) -- ``(tag + 1) << 2 | failed << 1 | persisted``: the source
      tag of the last op applied (-1: none), whether a fail arrived before the init (the
      init then fails the tree at once), and whether the entry has a live changelog record
      (:mod:`acker.durable`);
    - ``tasks``  (``H``, 2 bytes) -- the spout task + 1; 0 means "no init yet", so spout
      task ids are ``0 .. 65533``;
    - ``starts`` (``i``, 4 bytes) -- the start, in milliseconds from the table's ``epoch``
      (seconds on the ledger's clock), clamped to +-24.8 days. The ledger makes a table per
      RotatingMap bucket, each with the clock at its creation as its epoch, so a tree's
      start is exact unless it has been pending (``reset_timeout``) or was restored from a
      start more than 24.8 days away.

  * ``index`` (``I``, 4 bytes per slot) -- row + 1 (0: empty), open addressing with linear
    probing from ``root % capacity`` (root ids are random, so no further hashing) and
    backward-shift deletion (no tombstones). It grows by 1.5x when it would pass a load of
    0.8, so a lookup probes about 3 slots on average (a miss up to 13 at the top of the band).

O(1) expected per operation; ``items`` walks the dense rows only.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator

_NO_TASK = 0
_MAX_TASK = 0xFFFE
_PERSISTED = 1
_FAILED = 2
_MAX_REL_MS = 2**31 - 1
_LOAD_NUM, _LOAD_DEN = 4, 5
"""The index's largest load factor, 0.8, as a fraction."""


def _zeros(code: str, n: int) -> array[int]:
    return array(code, bytes(array(code).itemsize * n))


def _place(index: array[int], cap: int, root: int, row: int) -> None:
    """Point the first free index slot from ``root``'s home (linear probing) at ``row``."""
    i = root % cap
    while index[i] != 0:
        i += 1
        if i == cap:
            i = 0
    index[i] = row + 1


class CompactTable:
    """The acker's pending trees in dense parallel arrays behind an open-addressing index (35-40 bytes a tree; Storm's RotatingMap, compacted).

    Args:
      capacity: rows to make room for in the index before the first growth.
      epoch: seconds on the ledger's clock that a start of 0 ms stands for.
    """

    __slots__ = ("aux", "cap", "epoch", "index", "keys", "starts", "tasks", "vals")

    def __init__(self, capacity: int = 16, epoch: float = 0.0) -> None:
        self.keys: array[int] = array("Q")
        self.vals: array[int] = array("Q")
        self.aux: array[int] = array("Q")
        self.tasks: array[int] = array("H")
        self.starts: array[int] = array("i")
        self.epoch = epoch
        self.cap = 16
        while self.cap * _LOAD_NUM < capacity * _LOAD_DEN:
            self.cap = self.cap * 3 // 2
        self.index: array[int] = _zeros("I", self.cap)

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def nbytes(self) -> int:
        """Bytes the arrays hold, their over-allocation included (``sys.getsizeof``)."""
        return sum(sys.getsizeof(a) for a in (self.keys, self.vals, self.aux, self.tasks, self.starts, self.index))

    # -- the aux column ----------------------------------------------------------------
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

    # -- the task and start columns ----------------------------------------------------
    @staticmethod
    def pack_task(task: int | None) -> int:
        """``task`` (None: no init yet) as the ``tasks`` column holds it.

        Raises ValueError for a task outside ``0 .. 65533``.
        """
        if task is None:
            return _NO_TASK
        if 0 <= task <= _MAX_TASK - 1:
            return task + 1
        raise ValueError(f"spout task {task} out of range 0..{_MAX_TASK - 1}")

    def task_at(self, row: int) -> int | None:
        """The spout task of ``row`` (None: no init seen yet)."""
        t = self.tasks[row]
        return None if t == _NO_TASK else t - 1

    def set_task(self, row: int, task: int) -> None:
        """Record ``row``'s spout task (its init arrived); ValueError outside ``0 .. 65533``."""
        self.tasks[row] = self.pack_task(task)

    def pack_start(self, start: float) -> int:
        """``start`` (seconds on the ledger's clock) as the ``starts`` column holds it: ms from the epoch, clamped."""
        rel = round((start - self.epoch) * 1000)
        return _MAX_REL_MS if rel > _MAX_REL_MS else -_MAX_REL_MS if rel < -_MAX_REL_MS else rel

    def start_at(self, row: int) -> float:
        """The start of ``row``, in seconds on the ledger's clock (to the millisecond)."""
        return self.epoch + self.starts[row] / 1000.0

    # -- the index ---------------------------------------------------------------------
    def find(self, root: int) -> int:
        """The row of ``root``, or -1."""
        index, keys, cap = self.index, self.keys, self.cap
        i = root % cap
        while True:
            r = index[i]
            if r == 0:
                return -1
            if keys[r - 1] == root:
                return r - 1
            i += 1
            if i == cap:
                i = 0

    def insert(self, root: int, val: int, task: int | None, start: float, aux: int) -> int:
        """Insert a root that is not present; returns its row.

        Raises ValueError for a spout task outside ``0 .. 65533`` (nothing is inserted).
        """
        t = self.pack_task(task)
        row = len(self.keys)
        if (row + 1) * _LOAD_DEN > self.cap * _LOAD_NUM:
            self._grow()
        _place(self.index, self.cap, root, row)
        self.keys.append(root)
        self.vals.append(val)
        self.aux.append(aux)
        self.tasks.append(t)
        self.starts.append(self.pack_start(start))
        return row

    def _slot_of(self, row: int) -> int:
        """The index slot that points at ``row`` (which is present)."""
        index, cap = self.index, self.cap
        i = self.keys[row] % cap
        target = row + 1
        while index[i] != target:
            i += 1
            if i == cap:
                i = 0
        return i

    def delete(self, row: int) -> None:
        """Remove ``row``: its index slot goes by backward shift, and the last row moves into its place."""
        index, keys, cap = self.index, self.keys, self.cap
        # 1. the index: shift back every entry after the hole that may live closer to its home
        i = self._slot_of(row)
        j = i
        while True:
            j += 1
            if j == cap:
                j = 0
            r = index[j]
            if r == 0:
                break
            home = keys[r - 1] % cap
            # keep the entry at j if its home lies cyclically in (i, j]
            if (i < j and i < home <= j) or (j < i and (home > i or home <= j)):
                continue
            index[i] = r
            i = j
        index[i] = 0
        # 2. the dense rows: the last one fills the hole
        last = len(keys) - 1
        if row != last:
            index[self._slot_of(last)] = row + 1
            keys[row] = keys[last]
            self.vals[row] = self.vals[last]
            self.aux[row] = self.aux[last]
            self.tasks[row] = self.tasks[last]
            self.starts[row] = self.starts[last]
        keys.pop()
        self.vals.pop()
        self.aux.pop()
        self.tasks.pop()
        self.starts.pop()

    def _grow(self) -> None:
        cap = self.cap * 3 // 2
        index = _zeros("I", cap)
        for row, root in enumerate(self.keys):
            _place(index, cap, root, row)
        self.index, self.cap = index, cap

    def items(self) -> Iterator[tuple[int, int, int | None, float, int]]:
        """``(root, val, spout task, start, aux)`` for every entry (start: seconds on the ledger's clock)."""
        epoch, tasks, starts = self.epoch, self.tasks, self.starts
        for row, root in enumerate(self.keys):
            t = tasks[row]
            yield root, self.vals[row], None if t == _NO_TASK else t - 1, epoch + starts[row] / 1000.0, self.aux[row]
