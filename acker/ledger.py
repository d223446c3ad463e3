"""The acker's pure ledger: Storm's Acker bolt + RotatingMap, with no I/O.

State per pending tree: ``root -> (ack_val, spout_task, start_time, tag)``, stored in
:class:`acker.table.CompactTable` buckets (35-40 bytes per tree). ``spout_task`` is
``None`` until the init arrives; ``start_time`` is seconds on the injected clock
(kept to the millisecond); ``tag`` is the source position of the last op applied
(see *Idempotence*).

Algebra (Storm's ``daemon/Acker.java``: one ``AckObject`` per tree, XOR of edge ids):
  * ``init(root, val, task)`` XORs ``val`` (the XOR of the edge ids the spout emitted)
    into the entry and records the spout task.
  * ``ack(root, val)`` XORs ``val`` (input edge id ^ the edges emitted anchored to it).
  * The tree is complete when the value is 0 *and* the spout task is known; an ack may
    arrive before its init, so a 0 without a task waits.
  * ``fail(root)`` fails the tree at once. Completed and failed entries are removed.

Timeouts (Storm's RotatingMap): entries live in ``buckets`` tables, newest first. Every
``timeout_s / (buckets - 1)`` seconds :meth:`Ledger.tick` drops the oldest bucket and
fails everything in it. Cost: O(1) per message (at most ``buckets`` probes), O(capacity)
per expired bucket, no per-entry timers. Precision: an entry expires between
``timeout_s`` and ``timeout_s * buckets / (buckets - 1)`` after it was created (or
``reset_timeout``), plus the tick interval. ``reset_timeout`` moves it to the newest bucket.

Expired roots are remembered for one more rotation: a late ``ack`` for one yields a
*fail* outcome (never an ack) and does not re-create the entry.

Idempotence: every op may carry a ``tag`` (an int that grows with the source position,
e.g. ``offset << 20 | index``). An op whose tag is not above the entry's tag is ignored
and returns :data:`SKIP`, so replaying already-applied messages after a crash is harmless.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from acker.table import CompactTable

Clock = Callable[[], float]


class Reason(StrEnum):
    """Why a tree finished. The value is the metric counter's name."""

    COMPLETE = "complete"
    """Every edge acked and the init seen (the ack val reached 0)."""
    FAILED = "fail"
    """A bolt failed a tuple of the tree."""
    TIMEOUT = "timeout"
    """Not complete within ``topology.message.timeout.secs`` (RotatingMap expiry)."""
    LATE = "late"
    """An op for a tree that already timed out or failed: answered as a failure."""
    SKIP = "skip"
    """Not a finish: the op was already applied (its tag is not above the entry's)."""


@dataclass(slots=True)
class Outcome:
    """What the acker tells a spout task about one tree.

    Treat it as read-only. It is not frozen because a frozen dataclass costs ~2.2 us to build
    against ~0.6 us, once per tree.

    ``acked`` is True only for a complete tree. ``spout_task`` may be ``None`` when the
    init never arrived (nobody to tell). ``latency_s`` is seconds since the entry started.
    ``reason`` is a :class:`Reason`; ``why`` what the fail op said, if anything. ``tag`` is the
    tag of the finishing op (-1 for a timeout) and ``persisted`` says whether the entry
    had been marked persisted (see :meth:`Ledger.mark_persisted`).
    """

    root: int
    spout_task: int | None
    acked: bool
    latency_s: float
    reason: Reason
    tag: int = -1
    persisted: bool = False
    why: str = ""
    """Why a failed tree failed, as its fail op said (``""``: it did not say, or it was not a fail)."""


SKIP = Outcome(0, None, False, 0.0, Reason.SKIP)
"""Returned for an op whose tag shows it was already applied."""


class PendingTree(NamedTuple):
    """One pending tree as the ledger holds it (Storm Acker's ``AckObject``).

    ``ack_val``: XOR of everything applied; ``spout_task``: ``None`` until the init;
    ``start``: seconds on the ledger's clock; ``tag``: source tag of the last op (-1: none);
    ``failed``: a fail arrived before the init (the init will fail the tree at once);
    ``persisted``: the changelog holds a live record of it.
    """

    root: int
    ack_val: int
    spout_task: int | None
    start: float
    tag: int
    failed: bool
    persisted: bool = False

    @staticmethod
    def of(root: int, val: int, task: int | None, start: float, aux: int) -> PendingTree:
        """A read-only view of one table row (:meth:`acker.table.CompactTable.items`), its ``aux`` unpacked."""
        return PendingTree(root, val, task, start, CompactTable.tag_of(aux), CompactTable.failed_of(aux), CompactTable.persisted_of(aux))


class Ledger:
    """Pure acker state machine. Not thread-safe; one per acker task (partition).

    Args:
      timeout_s: ``topology.message.timeout.secs`` (seconds, > 0).
      clock: returns seconds; injectable for tests.
      buckets: RotatingMap bucket count (>= 2).

    Raises:
      ValueError: on a non-positive timeout or fewer than 2 buckets.
    """

    def __init__(self, timeout_s: float = 30.0, clock: Clock = time.monotonic, buckets: int = 3) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if buckets < 2:
            raise ValueError(f"buckets must be >= 2, got {buckets}")
        self.timeout_s = timeout_s
        self.clock = clock
        self.period_s = timeout_s / (buckets - 1)
        now = clock()
        self._buckets: deque[CompactTable] = deque(CompactTable(epoch=now) for _ in range(buckets))
        # Recently expired or failed-before-init roots, two generations (new, old).
        self._grave_new: dict[int, int | None] = {}
        self._grave_old: dict[int, int | None] = {}
        self._next_rotation = now + self.period_s
        self.duplicate_inits = 0
        """Inits ignored because their tree already had one (a record written twice; see :meth:`init`)."""

    # -- lookups ---------------------------------------------------------------------
    def __len__(self) -> int:
        return sum(len(b) for b in self._buckets)

    def __contains__(self, root: int) -> bool:
        return self._find(root)[0] is not None

    @property
    def nbytes(self) -> int:
        """Bytes held by the pending-tree tables."""
        return sum(b.nbytes for b in self._buckets)

    def _find(self, root: int) -> tuple[CompactTable | None, int]:
        # CompactTable.find inlined (linear probing over the index): this runs once or more per op.
        for table in self._buckets:
            index, keys, cap = table.index, table.keys, table.cap
            i = root % cap
            while True:
                r = index[i]
                if r == 0:
                    break
                if keys[r - 1] == root:
                    return table, r - 1
                i += 1
                if i == cap:
                    i = 0
        return None, -1

    def peek(self, root: int) -> tuple[float, bool] | None:
        """``(start, persisted)`` of the pending tree ``root`` (start: seconds on the ledger's clock), else ``None``; cheaper than :meth:`get`."""
        table, slot = self._find(root)
        if table is None:
            return None
        return table.start_at(slot), CompactTable.persisted_of(table.aux[slot])

    def get(self, root: int) -> PendingTree | None:
        """The pending tree ``root``, else ``None``."""
        table, slot = self._find(root)
        if table is None:
            return None
        return PendingTree.of(root, table.vals[slot], table.task_at(slot), table.start_at(slot), table.aux[slot])

    def items(self) -> Iterator[PendingTree]:
        """Every pending tree."""
        for table in self._buckets:
            for root, val, task, start, aux in table.items():
                yield PendingTree.of(root, val, task, start, aux)

    # -- messages --------------------------------------------------------------------
    def _late(self, root: int, spout_task: int | None = None) -> Outcome | None:
        for grave in (self._grave_new, self._grave_old):
            if root in grave:
                task = grave[root]
                return Outcome(root, task if task is not None else spout_task, False, 0.0, Reason.LATE)
        return None

    def _new(self, root: int, val: int, task: int | None, tag: int, failed: bool = False) -> int:
        return self._buckets[0].insert(root, val, task, self.clock(), CompactTable.pack_aux(tag, False, failed))

    def init(self, root: int, val: int, spout_task: int, tag: int = -1) -> Outcome | None:
        """Apply ``init(root, val, spout_task)``; returns an Outcome if the tree finished.

        A tree has exactly one init (its spout sends it once), so an init for a tree whose
        spout task is already known is a record written twice: it is ignored, counted in
        :attr:`duplicate_inits`, and returns :data:`SKIP`. Applied, it would XOR the spout's
        edges out again, and a tree whose bolts had not acked yet would complete at once.
        With the init applied once, no duplicate of any other op can complete a tree that was
        not fully processed: each edge must then be acked an odd number of times.
        """
        table, slot = self._find(root)
        if table is None:
            if self._grave_new or self._grave_old:
                late = self._late(root, spout_task)
                if late is not None:
                    return late
            table = self._buckets[0]
            slot = self._new(root, val, spout_task, tag)
            return self._check(table, slot, tag) if val == 0 else None
        aux = table.aux[slot]
        if self._applied(aux, tag):
            return SKIP
        if table.task_at(slot) is not None:  # a tree has one init: this one was written twice
            self.duplicate_inits += 1
            return SKIP
        if CompactTable.failed_of(aux):  # a fail came first: fail the tree now (Storm Acker)
            out = Outcome(root, spout_task, False, self.clock() - table.start_at(slot), Reason.FAILED, tag, CompactTable.persisted_of(aux))
            table.delete(slot)
            return out
        table.set_task(slot, spout_task)
        table.vals[slot] ^= val
        if tag >= 0:
            table.aux[slot] = CompactTable.with_tag(aux, tag)
        return self._check(table, slot, tag)

    def ack(self, root: int, val: int, tag: int = -1) -> Outcome | None:
        """Apply ``ack(root, val)``; returns an Outcome if the tree finished."""
        table, slot = self._find(root)
        if table is None:
            if self._grave_new or self._grave_old:
                late = self._late(root)
                if late is not None:
                    return late
            self._new(root, val, None, tag)
            return None
        aux = table.aux[slot]
        if self._applied(aux, tag):
            return SKIP
        vals = table.vals
        vals[slot] ^= val
        if tag >= 0:
            table.aux[slot] = CompactTable.with_tag(aux, tag)
        return self._check(table, slot, tag) if vals[slot] == 0 else None

    def fail(self, root: int, tag: int = -1) -> Outcome | None:
        """Apply ``fail(root)``: the tree fails now.

        Before its init there is nobody to tell yet, so the entry is kept, marked failed
        (and persisted like any entry), and the init fails the tree the moment it arrives
        (Storm Acker: a failed AckObject is answered once its spout task is known).
        """
        table, slot = self._find(root)
        if table is None:
            if self._late(root) is None:
                self._new(root, 0, None, tag, failed=True)
            return None
        aux = table.aux[slot]
        if self._applied(aux, tag):
            return SKIP
        task = table.task_at(slot)
        if task is None:
            table.aux[slot] = CompactTable.failed(CompactTable.with_tag(aux, tag) if tag >= 0 else aux)
            return None
        out = Outcome(root, task, False, self.clock() - table.start_at(slot), Reason.FAILED, tag, CompactTable.persisted_of(aux))
        table.delete(slot)
        return out

    def reset_timeout(self, root: int, tag: int = -1) -> Outcome | None:
        """Restart ``root``'s timeout clock (moves it to the newest bucket)."""
        table, slot = self._find(root)
        if table is None:
            return None
        aux = table.aux[slot]
        if self._applied(aux, tag):
            return SKIP
        val, task, start = table.vals[slot], table.task_at(slot), table.start_at(slot)
        if tag >= 0:
            aux = CompactTable.with_tag(aux, tag)
        table.delete(slot)
        self._buckets[0].insert(root, val, task, start, aux)
        return None

    def spout_task_of(self, root: int) -> int | None:
        """The spout task of a pending ``root`` (None: not pending, or its init has not arrived)."""
        table, slot = self._find(root)
        return None if table is None else table.task_at(slot)

    @staticmethod
    def _applied(aux: int, tag: int) -> bool:
        """True if a tagged op at ``tag`` was already applied to this entry."""
        return 0 <= tag <= CompactTable.tag_of(aux)

    def _check(self, table: CompactTable, slot: int, tag: int) -> Outcome | None:
        if table.vals[slot] == 0:
            task = table.task_at(slot)
            if task is not None:
                latency = self.clock() - table.start_at(slot)
                out = Outcome(table.keys[slot], task, True, latency, Reason.COMPLETE, tag, CompactTable.persisted_of(table.aux[slot]))
                table.delete(slot)
                return out
        return None

    # -- persistence hooks -----------------------------------------------------------
    def mark_persisted(self, root: int) -> None:
        """Flag ``root`` as having a live record in the changelog."""
        table, slot = self._find(root)
        if table is not None:
            table.aux[slot] = CompactTable.persisted(table.aux[slot])

    def restore(self, root: int, val: int, spout_task: int | None, start: float, tag: int, failed: bool = False) -> None:
        """Put an entry back from the changelog (persisted; no completion check).

        It goes to the bucket its age puts it in, so it times out at ``start`` plus the
        timeout (within the RotatingMap's precision), not a full timeout after the restore.
        """
        table, slot = self._find(root)
        if table is not None:
            table.delete(slot)
        self._buckets[self._bucket_for(start)].insert(root, val, spout_task, start, CompactTable.pack_aux(tag, True, failed))

    def _bucket_for(self, start: float) -> int:
        """The bucket an entry started at ``start`` belongs in.

        The entry in bucket ``i`` is popped by the ``buckets - i``-th rotation from now, so
        pick the first rotation at or after ``start + timeout_s`` (the next one if that is
        past). It then expires within one period after its deadline, as a tree that never
        left the ledger does.
        """
        n = len(self._buckets)
        deadline = start + self.timeout_s
        k = max(1, math.ceil((deadline - self._next_rotation) / self.period_s) + 1)
        return n - min(n, k)

    def forget(self, root: int) -> None:
        """Drop an entry without an outcome."""
        table, slot = self._find(root)
        if table is not None:
            table.delete(slot)

    # -- time ------------------------------------------------------------------------
    def tick(self) -> list[Outcome]:
        """Rotate the buckets if a period has passed; return the timed-out trees."""
        now = self.clock()
        out: list[Outcome] = []
        while now >= self._next_rotation:
            self._next_rotation += self.period_s
            expired = self._buckets.pop()
            self._buckets.appendleft(CompactTable(epoch=now))
            self._grave_old = self._grave_new
            self._grave_new = {}
            for root, _val, task, start, aux in expired.items():
                self._grave_new[root] = task
                out.append(Outcome(root, task, False, now - start, Reason.TIMEOUT, -1, CompactTable.persisted_of(aux)))
        return out
