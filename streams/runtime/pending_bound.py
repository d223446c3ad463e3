"""How many trees a spout task may keep in flight: a bound that adapts to complete latency.

Throughput of a reliable spout is capped by Little's law: trees in flight / complete latency.
Storm leaves ``topology.max.spout.pending`` to the user (unbounded by default; storm-kafka-client
allows 10M uncommitted offsets); too low a bound starves a fast topology, too high a bound lets
trees queue at a slow bolt until they time out and are replayed, which adds load (congestion
collapse). Heron and Storm 2 answer with backpressure. Squall adapts the bound, as TCP adapts
its congestion window, to a complete latency target:

* every ``window_s`` seconds, if any tree timed out, or more than a tenth of the trees
  completed in the window took longer than ``target_s``, or the oldest tree still in flight
  is older than ``target_s``: the bound shrinks to 70% (never below ``floor``);
* else, if a task hit the bound during the window (the bound, not the input, limited it):
  the bound doubles while every tree took at most half the target (TCP's slow start, so a
  fast topology is not starved for long by a small first bound), else grows by
  ``target / slowest`` (the window's slowest complete latency), between 30% and 2x (never
  above ``ceiling``): by Little's law, trees in flight scale with complete latency, so a
  topology at half its target may double its trees in flight (as Netflix's gradient
  concurrency limit scales by the ratio of the target to the measured latency);
* else it stays.

Until the first tree takes more than half the target (or the bound first shrinks), the bound is
in **slow start**, as TCP's congestion window: while a task is held back by the bound, every
tree completed within half the target raises it by the message ids that tree carried, so it
doubles once per complete latency, paced by completions (a 1 s window alone took ~7 s to go
from 100 to 12,800, longer than a whole benchmark run). A tree that took less than a quarter of
the target raises it by its message ids times ``target / 2 / latency - 1`` (at most 3): by
Little's law, trees in flight times ``target / 2 / latency`` would take at most half the
target even if the topology were already at its limit, so the bound grows that much per
complete latency, up to 4x, rather than 2x. Measured on Apache Kafka, the flights workload
(trees of ~0.15 s at the start): at 2x per complete latency, the first second acked 23,500 of
its 336,775 rows, against about 100,000 a second after it. A window in which the task hit the
bound and every tree took at most half the target starts slow start again (as TCP restarts it
after an idle period): the bound is far below what the topology can take. Without that, a task
whose first trees were slow (a start-up hiccup) or that shared the topology with a task holding
most of the trees in flight grew one doubling per window once the way was clear; measured on
Apache Kafka, word count with two spout tasks: one task's bound went 144 -> 13,533 in 8 s after
the other task's partition was done, and the run took that long longer.

It starts small (100 message ids per task), so a first burst cannot time out at a slow bolt.

So a fast topology runs at the CPU's limit with complete latency near the target, a slow bolt
makes the spout hold back instead of timing trees out, and memory stays within ``ceiling``
trees (times a record's size) per task. A user's explicit ``topology.max.spout.pending`` is a
fixed bound, as in Storm (:class:`FixedBound`).

Pure, with an injected clock. Not thread-safe: the spout executor's thread makes every call.

Example: the window's trees completed quickly and a task hit the bound, so it grows; then one
tree times out, so it shrinks::

    >>> now = [0.0]
    >>> b = AdaptiveBound(initial=1000, target_s=1.0, clock=lambda: now[0])
    >>> for _ in range(50):
    ...     b.completed(0.2)
    >>> b.hit()
    >>> now[0] = 1.0
    >>> b.adjust(oldest_age_s=0.3), b.limit      # all well under half the target: doubles
    ('grow', 2000)
    >>> b.completed(0.6); b.completed(0.625); b.hit()
    >>> now[0] = 2.0
    >>> b.adjust(oldest_age_s=0.3), b.limit      # under the target: x 1.0 / 0.625
    ('grow', 3200)
    >>> b.timed_out()
    >>> now[0] = 3.0
    >>> b.adjust(oldest_age_s=0.3), b.limit
    ('shrink', 2240)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from typing_extensions import override


class PendingBound(Protocol):
    """What the spout executor asks of a bound (per spout task, the same for all its tasks)."""

    @property
    def limit(self) -> int:
        """Trees in flight allowed per task now."""
        ...

    def completed(self, latency_s: float, weight: int = 1) -> None:
        """A tree that carried ``weight`` message ids was acked ``latency_s`` seconds after its emit."""
        ...

    def timed_out(self) -> None:
        """A tree timed out (``topology.message.timeout.secs``)."""
        ...

    def hit(self) -> None:
        """A task had ``limit`` trees in flight and could not emit."""
        ...

    def adjust(self, oldest_age_s: float) -> str:
        """Maybe change the bound (called often; acts once per window).

        ``oldest_age_s``: the age of the oldest tree in flight (0 if none). Returns what it
        did.
        """
        ...


class FixedBound(PendingBound):
    """``topology.max.spout.pending`` set by the user: a fixed bound (Storm's semantics)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit

    @override
    @property
    def limit(self) -> int:
        return self._limit

    @override
    def completed(self, latency_s: float, weight: int = 1) -> None:
        pass

    @override
    def timed_out(self) -> None:
        pass

    @override
    def hit(self) -> None:
        pass

    @override
    def adjust(self, oldest_age_s: float) -> str:
        return "fixed"


class AdaptiveBound(PendingBound):
    """Trees in flight per task, adapted to a complete latency target (see the module docstring).

    Args:
      initial: the first bound (message ids in flight per task).
      target_s: complete latency target (seconds).
      floor, ceiling: the bound's range (message ids in flight per task).
      window_s: how often the bound may change (seconds).
      clock: seconds (monotonic); injectable for tests.
      hold_s: what every tree waits on purpose (seconds: a stateful bolt's checkpoint interval,
        a window's length): taken off each complete latency before it is compared with the
        target, so a tree that waited for a checkpoint is not "slow" and slow start lasts.
    """

    GROW = 1.3
    SLOW_START = 2.0
    QUICK_START = 3
    """In slow start, the most a fast tree raises the bound by, in multiples of its message ids (4x per complete latency)."""
    SHRINK = 0.7
    SLOW_FRACTION = 0.1
    HOLD_BOOST = 16

    def __init__(
        self,
        initial: int = 100,
        target_s: float = 1.0,
        floor: int = 50,
        ceiling: int = 20_000,
        window_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        hold_s: float = 0.0,
    ) -> None:
        if not 0 < floor <= initial <= ceiling:
            raise ValueError(f"need 0 < floor <= initial <= ceiling, got {floor}, {initial}, {ceiling}")
        self._limit = initial
        self.target_s = target_s
        self.floor = floor
        self.ceiling = ceiling
        self.window_s = window_s
        self.clock = clock
        self.hold_s = hold_s
        self._window_end = clock() + window_s
        self._done = 0
        self._slow = 0
        self._fast = 0
        self._timeouts = 0
        self._slowest = 0.0
        self._hit = False
        self.slow_start = True
        """True until a tree takes more than half the target or the bound shrinks; again after a window of fast trees that hit the bound."""
        self.changes = 0
        """How many times the bound changed (for the executor's metrics)."""

    @override
    @property
    def limit(self) -> int:
        return self._limit

    @override
    def completed(self, latency_s: float, weight: int = 1) -> None:
        raw = latency_s
        latency_s -= self.hold_s
        if self.hold_s:
            # Slow start doubles the bound once per complete latency; a tree that waited for a
            # checkpoint took longer than its work, so it counts as the trees that work alone
            # would have completed in that time (at most HOLD_BOOST of them).
            weight *= min(self.HOLD_BOOST, max(1, int(raw / max(latency_s, self.target_s / 10))))
        self._done += 1
        if latency_s > self._slowest:
            self._slowest = latency_s
        if latency_s > self.target_s:
            self._slow += 1
        elif latency_s <= self.target_s / 2:
            self._fast += 1
            if self.slow_start and self._hit and self._limit < self.ceiling:
                if not self.hold_s and latency_s < self.target_s / 4:  # far within the target: Little's law (module docstring)
                    weight = int(weight * min(self.QUICK_START, self.target_s / 2 / max(latency_s, 1e-9) - 1))
                self._limit = min(self.ceiling, self._limit + weight)
                self.changes += 1
            return
        self.slow_start = False

    @override
    def timed_out(self) -> None:
        self._timeouts += 1

    @override
    def hit(self) -> None:
        self._hit = True

    @override
    def adjust(self, oldest_age_s: float) -> str:
        now = self.clock()
        if now < self._window_end:
            return "wait"
        self._window_end = now + self.window_s
        oldest_age_s -= self.hold_s
        slow = self._timeouts > 0 or self._slow > self.SLOW_FRACTION * self._done or oldest_age_s > self.target_s
        hit = self._hit
        fast = self._fast == self._done and oldest_age_s <= self.target_s / 2
        slowest = max(self._slowest, oldest_age_s)
        self._done = self._slow = self._fast = self._timeouts = 0
        self._slowest = 0.0
        self._hit = False
        before = self._limit
        if slow:
            self._limit = max(self.floor, int(self._limit * self.SHRINK))
            self.slow_start = False
            what = "shrink"
        elif hit:
            factor = self.SLOW_START if fast else min(self.SLOW_START, max(self.GROW, self.target_s / max(slowest, 1e-9)))
            if fast:
                self.slow_start = True  # far below what the topology takes: grow per completion again
            self._limit = min(self.ceiling, int(self._limit * factor))
            what = "grow"
        else:
            return "keep"
        if self._limit != before:
            self.changes += 1
        return what
