"""The acker's pure ledger: Storm's Acker bolt + RotatingMap, with no I/O.

State: ``root -> [ack_val, spout_task, start_time]`` (``spout_task`` is ``None`` until
the init arrives; ``start_time`` in seconds from the injected clock).

Algebra (Storm Acker; ../shared/seeds/000, 002):
  * ``init(root, val, task)`` XORs ``val`` (the XOR of the edge ids the spout emitted)
    into the entry and records the spout task.
  * ``ack(root, val)`` XORs ``val`` (input edge id ^ the edges emitted anchored to it).
  * The tree is complete when the value is 0 *and* the spout task is known; an ack may
    arrive before its init, so a 0 without a task waits.
  * ``fail(root)`` fails the tree at once. Completed and failed entries are removed.

Timeouts (Storm's RotatingMap): entries live in ``buckets`` dicts, newest first. Every
``timeout_s / (buckets - 1)`` seconds :meth:`Ledger.tick` drops the oldest bucket and
fails everything in it. Cost: O(1) per message (at most ``buckets`` dict probes), O(n)
per expired bucket, no per-entry timers. Precision: an entry expires between
``timeout_s`` and ``timeout_s * buckets / (buckets - 1)`` after it was last (re)started,
plus the tick interval. ``reset_timeout`` moves an entry to the newest bucket.

Expired roots are remembered for one more rotation: a late ``ack`` for one yields a
*fail* outcome (never an ack), and it does not re-create the entry.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]

COMPLETE = "complete"
FAILED = "fail"
TIMEOUT = "timeout"
LATE = "late"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the acker tells a spout task about one tree.

    ``acked`` is True only for a complete tree. ``spout_task`` may be ``None`` when the
    init never arrived (nobody to tell). ``latency_s`` is seconds since the entry started.
    ``reason`` is one of ``complete``, ``fail``, ``timeout``, ``late``.
    """

    root: int
    spout_task: int | None
    acked: bool
    latency_s: float
    reason: str


class Ledger:
    """Pure acker state machine. Not thread-safe; one per acker task (partition).

    Args:
      timeout_s: ``topology.message.timeout.secs`` (seconds, > 0).
      clock: returns seconds (monotonic); injectable for tests.
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
        self._buckets: deque[dict[int, list]] = deque({} for _ in range(buckets))
        # Recently expired or failed-before-init roots, two generations (new, old).
        self._grave_new: dict[int, int | None] = {}
        self._grave_old: dict[int, int | None] = {}
        self._next_rotation = clock() + self.period_s

    # -- lookups ---------------------------------------------------------------------
    def __len__(self) -> int:
        return sum(len(b) for b in self._buckets)

    def __contains__(self, root: int) -> bool:
        return self._find(root) is not None

    def get(self, root: int) -> tuple[int, int | None, float] | None:
        """``(ack_val, spout_task, start_time)`` for a pending root, else ``None``."""
        found = self._find(root)
        if found is None:
            return None
        val, task, start = found[1][root]
        return val, task, start

    def items(self) -> list[tuple[int, int, int | None, float]]:
        """Every pending ``(root, ack_val, spout_task, start_time)``, oldest bucket last."""
        return [(r, e[0], e[1], e[2]) for b in self._buckets for r, e in b.items()]

    def _find(self, root: int) -> tuple[int, dict[int, list]] | None:
        for i, bucket in enumerate(self._buckets):
            if root in bucket:
                return i, bucket
        return None

    # -- messages --------------------------------------------------------------------
    def _entry(self, root: int) -> tuple[dict[int, list], list] | None:
        for bucket in self._buckets:
            entry = bucket.get(root)
            if entry is not None:
                return bucket, entry
        return None

    def _late(self, root: int, spout_task: int | None = None) -> Outcome | None:
        for grave in (self._grave_new, self._grave_old):
            if root in grave:
                task = grave[root]
                return Outcome(root, task if task is not None else spout_task, False, 0.0, LATE)
        return None

    def init(self, root: int, val: int, spout_task: int) -> Outcome | None:
        """Apply ``init(root, val, spout_task)``; returns an Outcome if the tree finished."""
        found = self._entry(root)
        if found is None:
            late = self._late(root, spout_task)
            if late is not None:
                return late
            self._buckets[0][root] = [val, spout_task, self.clock()]
            return self._check(self._buckets[0], root, self._buckets[0][root])
        bucket, entry = found
        entry[0] ^= val
        entry[1] = spout_task
        return self._check(bucket, root, entry)

    def ack(self, root: int, val: int) -> Outcome | None:
        """Apply ``ack(root, val)``; returns an Outcome if the tree finished."""
        found = self._entry(root)
        if found is None:
            late = self._late(root)
            if late is not None:
                return late
            self._buckets[0][root] = [val, None, self.clock()]
            return None
        bucket, entry = found
        entry[0] ^= val
        return self._check(bucket, root, entry)

    def fail(self, root: int) -> Outcome | None:
        """Apply ``fail(root)``: the tree fails now (if its spout task is unknown the entry
        is kept as failed-on-arrival: a later init then fails at once)."""
        found = self._entry(root)
        if found is None:
            if root not in self._grave_old:
                # Fail before init: remember it so the init fails the tree at once.
                self._grave_new.setdefault(root, None)
            return None
        bucket, entry = found
        del bucket[root]
        return Outcome(root, entry[1], False, self.clock() - entry[2], FAILED)

    def reset_timeout(self, root: int) -> None:
        """Restart ``root``'s timeout clock (moves it to the newest bucket)."""
        found = self._entry(root)
        if found is not None:
            bucket, entry = found
            del bucket[root]
            self._buckets[0][root] = entry

    def _check(self, bucket: dict[int, list], root: int, entry: list) -> Outcome | None:
        if entry[0] == 0 and entry[1] is not None:
            del bucket[root]
            return Outcome(root, entry[1], True, self.clock() - entry[2], COMPLETE)
        return None

    # -- time ------------------------------------------------------------------------
    def tick(self) -> list[Outcome]:
        """Rotate the buckets if a period has passed; return the timed-out trees."""
        now = self.clock()
        out: list[Outcome] = []
        while now >= self._next_rotation:
            self._next_rotation += self.period_s
            expired = self._buckets.pop()
            self._buckets.appendleft({})
            self._grave_old = self._grave_new
            self._grave_new = {root: entry[1] for root, entry in expired.items()}
            for root, entry in expired.items():
                out.append(Outcome(root, entry[1], False, now - entry[2], TIMEOUT))
        return out

    # -- restore ---------------------------------------------------------------------
    def restore(self, root: int, val: int, spout_task: int | None, start: float) -> None:
        """Put an entry back from the changelog (no completion check)."""
        self._buckets[0][root] = [val, spout_task, start]

    def forget(self, root: int) -> None:
        """Drop an entry (a changelog tombstone) without an outcome."""
        found = self._find(root)
        if found is not None:
            del found[1][root]
