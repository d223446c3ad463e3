"""Which tuples are in which window, and when a tuple can be acked (Storm's ``WindowManager`` with its trigger and eviction policies).

Pure: no clock of its own and no Kafka. The caller feeds items in time order:

* ``add(ts, item)`` -- one item at time ``ts`` (seconds, never below an earlier ``ts``);
* ``advance(now)`` -- time has reached ``now``: no item older than ``now`` will come.

Both return the windows that fired (:class:`Firing`). :meth:`WindowEngine.take_expired` returns
the items that can be in no later window, once each (Storm acks them then: "tuples in the
window are automatically acked when they expire").

When a window fires, by its interval:

* ``Count(m)``: after every m-th item; the window ends at (and holds) that item.
* ``Duration(i)``: at every multiple of i seconds (aligned, as Storm's event-time windows and
  Quix's), once time reaches it; the window is ``[end - length, end)``. A window that would
  hold no item does not fire.

What it holds, by its length: the last ``Count(n)`` items up to its end, or the items of the
last ``Duration(s)`` (``[end - s, end)``, or ``(end - s, end]`` when a count fires it).

Memory: one :class:`Entry` per held item (three slots, 64 bytes on CPython 3.11) plus the item.

Example: sliding windows of 10 s every 5 s::

    >>> e = WindowEngine(WindowSpec(Duration(10.0), Duration(5.0)))
    >>> e.add(1.0, "a"), e.add(4.0, "b")
    ([], [])
    >>> [(f.start, f.end, f.tuples, f.new) for f in e.add(6.0, "c")]  # time 6 passed the end 5
    [(-5.0, 5.0, ['a', 'b'], ['a', 'b'])]
    >>> [(f.start, f.end, f.tuples, f.new) for f in e.advance(10.0)]
    [(0.0, 10.0, ['a', 'b', 'c'], ['c'])]
    >>> e.take_expired()  # a and b are in no window after [0, 10)
    ['a', 'b']
    >>> [(f.start, f.end, f.tuples, f.expired) for f in e.advance(15.0)]
    [(5.0, 15.0, ['c'], ['a', 'b'])]
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from streams.windowing.spec import Count, Duration, WindowSpec

T = TypeVar("T")


class Entry(Generic[T]):
    """One held item: its time (seconds), its arrival number (1, 2, ...) and the item."""

    __slots__ = ("item", "seq", "ts")

    def __init__(self, ts: float, seq: int, item: T) -> None:
        self.ts = ts
        self.seq = seq
        self.item = item


@dataclass(frozen=True, slots=True)
class Firing(Generic[T]):
    """One evaluated window (Storm's ``TupleWindow``).

    ``tuples``: the items in the window, oldest first; ``new``: those that arrived since the
    previous firing; ``expired``: the items of earlier windows that left since the previous
    firing (they were acked); ``start``/``end``: the window's bounds (seconds). So the
    previous window's tuples, plus ``new``, minus ``expired``, are ``tuples``: a window can be
    aggregated incrementally (storm-starter's RollingCountBolt).
    """

    tuples: list[T]
    new: list[T]
    expired: list[T]
    start: float
    end: float


class WindowEngine(Generic[T]):
    """Windows over items fed in time order (see the module docstring).

    Args:
      spec: the window's length and interval (event-time options are the caller's:
        :class:`~streams.windowing.watermark.EventTimeWindows`).

    Raises ValueError when an item's ``ts`` is older than time already reached.
    """

    def __init__(self, spec: WindowSpec) -> None:
        self.spec = spec
        self.entries: deque[Entry[T]] = deque()
        """Held items, in time order: each may still be in a window."""
        self.seq = 0
        """Items added so far."""
        self.now = -math.inf
        """The time reached (seconds)."""
        self.next_end: float | None = None
        """Duration interval: the end of the next window to fire (None: nothing to fire)."""
        self.last_end = -math.inf
        """Duration interval: the end of the last window fired or passed (seconds)."""
        self._last_new = 0
        self._phase = 0
        """A Count interval fires when ``seq - _phase`` is a multiple of it (a flush restarts the count)."""
        self._expired: list[T] = []
        self._unacked: list[T] = []

    def __len__(self) -> int:
        return len(self.entries)

    # -- feeding ---------------------------------------------------------------------------------
    def add(self, ts: float, item: T) -> list[Firing[T]]:
        """Hold ``item`` at time ``ts``; returns the windows that fired (at ``ts``, then the one it completes by count)."""
        if ts < self.now:
            raise ValueError(f"item at {ts} s is older than the time reached, {self.now} s")
        fired = self.advance(ts)
        self.seq += 1
        self.entries.append(Entry(ts, self.seq, item))
        interval = self.spec.interval
        if isinstance(interval, Count):
            if (self.seq - self._phase) % interval.n == 0:
                fired.append(self._fire_at_item())
        elif self.next_end is None:
            self._schedule()
        self._evict()
        return fired

    def advance(self, now: float) -> list[Firing[T]]:
        """Time reaches ``now``: fire every Duration-interval window that ends at or before it."""
        if now <= self.now:
            return []
        self.now = now
        fired: list[Firing[T]] = []
        while self.next_end is not None and self.next_end <= now:
            firing = self._fire_at_time(self.next_end)
            if firing is not None:
                fired.append(firing)
        self._evict()
        return fired

    def flush(self) -> list[Firing[T]]:
        """The stream ended (or went idle): fire what a Count interval has not fired yet, then expire everything held.

        A Count interval fires one last window, ending at the newest item, if items arrived
        since its last window (the window is shorter than a Count length when fewer items
        came); the next window then comes after a full interval of new items. A Duration
        interval fires nothing here: windows fire as time advances.
        """
        fired: list[Firing[T]] = []
        if isinstance(self.spec.interval, Count) and self.entries and self.entries[-1].seq > self._last_new:
            fired.append(self._fire_at_item())
        self._phase = self.seq
        while self.entries:
            self._expire(self.entries.popleft())
        self.next_end = None
        return fired

    def take_expired(self) -> list[T]:
        """Items that can be in no later window, each returned once (to be acked)."""
        out, self._unacked = self._unacked, []
        return out

    def held(self) -> Iterator[T]:
        """Every held item, oldest first."""
        return (e.item for e in self.entries)

    # -- persistence -----------------------------------------------------------------------------
    def dump(self, ref: Callable[[T], int]) -> dict[str, Any]:
        """Everything but the spec, as JSON-able data, each item replaced by ``ref(item)`` (a stateful windowed bolt's checkpoint)."""
        return {
            "entries": [[e.ts, e.seq, ref(e.item)] for e in self.entries],
            "seq": self.seq,
            "now": self.now,
            "next_end": self.next_end,
            "last_end": self.last_end,
            "last_new": self._last_new,
            "phase": self._phase,
            "expired": [ref(i) for i in self._expired],
            "unacked": [ref(i) for i in self._unacked],
        }

    @classmethod
    def load(cls, spec: WindowSpec, data: dict[str, Any], item: Callable[[int], T]) -> WindowEngine[T]:
        """The engine :meth:`dump` saved, items brought back by ``item(ref)``. Raises KeyError/TypeError for data it did not write."""
        e: WindowEngine[T] = cls(spec)
        e.entries = deque(Entry(float(ts), int(seq), item(r)) for ts, seq, r in data["entries"])
        e.seq = int(data["seq"])
        e.now = float(data["now"])
        e.next_end = None if data["next_end"] is None else float(data["next_end"])
        e.last_end = float(data["last_end"])
        e._last_new = int(data["last_new"])
        e._phase = int(data["phase"])
        e._expired = [item(r) for r in data["expired"]]
        e._unacked = [item(r) for r in data["unacked"]]
        return e

    # -- firing ----------------------------------------------------------------------------------
    def _fire_at_item(self) -> Firing[T]:
        last = self.entries[-1]
        length = self.spec.length
        if isinstance(length, Count):
            window = [e for e in self.entries if e.seq > last.seq - length.n]
            start = window[0].ts
        else:
            start = last.ts - length.seconds
            window = [e for e in self.entries if e.ts > start]
        return self._firing(window, start, last.ts)

    def _fire_at_time(self, end: float) -> Firing[T] | None:
        """Fire the window ending at ``end`` (None if it holds nothing), then schedule the next."""
        length = self.spec.length
        before = [e for e in self.entries if e.ts < end]
        if isinstance(length, Count):
            window = before[-length.n :]
            start = window[0].ts if window else end
        else:
            start = end - length.seconds
            window = [e for e in before if e.ts >= start]
        firing = self._firing(window, start, end) if window else None
        self.last_end = end
        self._schedule()
        return firing

    def _schedule(self) -> None:
        """Set ``next_end``, the next window to fire.

        That is the first aligned end after the last fired one whose window holds something
        (a Count length: something new; the same tuples do not fire twice); a Duration length also drops what that window and later ones cannot hold.
        """
        interval, length = self.spec.interval, self.spec.length
        assert isinstance(interval, Duration)
        base = self.last_end + interval.seconds
        entries = self.entries
        if isinstance(length, Count):
            oldest_new = next((e.ts for e in entries if e.seq > self._last_new), None)
            self.next_end = None if oldest_new is None else max(base, _aligned_end(oldest_new, interval.seconds))
            return
        while entries:
            end = max(base, _aligned_end(entries[0].ts, interval.seconds))
            if entries[0].ts >= end - length.seconds:
                self.next_end = end
                return
            while entries and entries[0].ts < end - length.seconds:
                self._expire(entries.popleft())
        self.next_end = None

    def _firing(self, window: list[Entry[T]], start: float, end: float) -> Firing[T]:
        last_new = self._last_new
        new = [e.item for e in window if e.seq > last_new]
        self._last_new = max(last_new, window[-1].seq)
        expired, self._expired = self._expired, []
        return Firing([e.item for e in window], new, expired, start, end)

    # -- expiry ----------------------------------------------------------------------------------
    def _evict(self) -> None:
        """Drop what no later window can hold (a Duration length with a Duration interval: :meth:`_schedule`)."""
        entries = self.entries
        length, interval = self.spec.length, self.spec.interval
        if isinstance(length, Count):
            if isinstance(interval, Count):
                next_fire = self._phase + ((self.seq - self._phase) // interval.n + 1) * interval.n
                keep_from = next_fire - length.n + 1  # the next window holds seq >= this
            else:
                keep_from = self.seq - length.n + 1  # a later window holds the last n at most
            while entries and entries[0].seq < keep_from:
                self._expire(entries.popleft())
        elif isinstance(interval, Count):
            keep_after = self.now - length.seconds  # a later window ends at >= now: holds ts > now - length
            while entries and entries[0].ts <= keep_after:
                self._expire(entries.popleft())

    def _expire(self, entry: Entry[T]) -> None:
        if entry.seq <= self._last_new:  # it was in a window: the next firing reports it expired
            self._expired.append(entry.item)
        self._unacked.append(entry.item)


def _aligned_end(ts: float, interval_s: float) -> float:
    """The first multiple of ``interval_s`` strictly after ``ts``: the end of the first window that holds it."""
    return (math.floor(ts / interval_s) + 1) * interval_s
