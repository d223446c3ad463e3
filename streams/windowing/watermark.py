"""Event-time windows: a watermark orders out-of-order tuples, then the engine windows them.

After Storm's ``WaterMarkEventGenerator`` and ``WatermarkTimeTriggerPolicy``.

The watermark is the minimum over the input channels seen so far of the newest timestamp on
that channel, minus the lag (seconds). A channel is one upstream task's stream (Flink's
input channels; Storm takes whole streams, so one fast upstream task makes its siblings'
tuples late: two parse tasks a few batches apart are hours of event time apart). It only
moves forward, and only when :meth:`EventTimeWindows.tick` is called (every
``watermark_interval_s``, by the bolt's timer).

* A tuple older than the watermark is **late**: :meth:`EventTimeWindows.add` returns False and
  does not hold it (the bolt emits it on the late stream, or acks and counts it).
* Other tuples wait in a heap. On a tick, those older than the new watermark go to the
  engine in timestamp order, and every window ending at or before the watermark fires:
  so out-of-order input within the lag gives the windows of sorted input.
* **Inputs not heard from yet** (:meth:`EventTimeWindows.expect`): a bolt with several inputs
  (a join) names them, and the watermark does not move until each has sent a tuple (or, with
  ``idle_s``, for ``idle_s`` seconds after it was named). Otherwise the first input to arrive
  moves the watermark alone, and the other's first tuples, a hop or two behind, are late. The
  same holds after the whole bolt went quiet for ``idle_s``: the inputs are expected again.
* **Idle channels and streams** (``idle_s``, after Quix's issue #790): a channel without a
  tuple for ``idle_s`` seconds of processing time stops holding the watermark back (Flink's
  idleness). When every channel is idle, the watermark jumps past every held tuple's last
  window, as if the stream had ended, so the last windows fire (a Count interval fires its
  partial window: :meth:`~streams.windowing.engine.WindowEngine.flush`); a tuple arriving
  later and older than that is late.

Pure; ``now`` (processing time, seconds) is passed in.

    >>> w = EventTimeWindows(WindowSpec.tumbling(Duration(10.0), timestamp="ts", lag_s=5.0))
    >>> [w.add("s", ts, x, now=0.0) for ts, x in [(12.0, "b"), (3.0, "a"), (16.0, "c")]]
    [True, True, True]
    >>> [(f.end, f.tuples) for f in w.tick(now=1.0)]  # watermark 16 - 5 = 11: [0, 10) is complete
    [(10.0, ['a'])]
    >>> w.add("s", 9.0, "late", now=1.5), w.watermark
    (False, 11.0)
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from streams.windowing.engine import Firing, WindowEngine
from streams.windowing.spec import Duration, WindowSpec

T = TypeVar("T")


class EventTimeWindows(Generic[T]):
    """Windows by the tuples' own timestamps (see the module docstring).

    Args:
      spec: the window, with ``timestamp`` set (event time); its ``lag_s`` and ``idle_s`` apply here.
    """

    def __init__(self, spec: WindowSpec) -> None:
        self.spec = spec
        self.engine: WindowEngine[T] = WindowEngine(spec)
        self.watermark = -math.inf
        """Seconds of event time: no tuple older than this will be windowed."""
        self.newest: dict[str, float] = {}
        """Per input channel: the newest timestamp seen (seconds)."""
        self.seen: dict[str, float] = {}
        """Per input channel: the processing time of its last tuple (seconds)."""
        self.last_arrival = -math.inf
        """Processing time of the last tuple added (seconds)."""
        self.late = 0
        """Tuples refused as late (count)."""
        self._pending: list[tuple[float, int, T]] = []
        self._order = 0
        """Tuples added so far (a tie-break in the heap; an int, so the windows pickle)."""
        self.waiting: dict[str, float] = {}
        """Inputs named by :meth:`expect` that sent nothing yet: input -> processing time it was named (seconds)."""
        self.expected: list[str] = []
        """Every input named by :meth:`expect` (expected again after the bolt went quiet)."""

    def expect(self, inputs: list[str], now: float) -> None:
        """Hold the watermark until each of ``inputs`` (names :meth:`add` gets as ``input``) sent a tuple, or was idle for ``idle_s`` from ``now``.

        >>> w = EventTimeWindows(WindowSpec.tumbling(Duration(10.0), timestamp="ts"))
        >>> w.expect(["flights", "weather"], now=0.0)
        >>> w.add("w:0", 25.0, "rain", now=0.1, input="weather")
        True
        >>> w.tick(now=0.2), w.watermark  # the flights have not come: nothing moves
        ([], -inf)
        >>> [w.add("f:0", ts, f, now=0.3, input="flights") for ts, f in [(3.0, "UA 1545"), (26.0, "AA 11")]]
        [True, True]
        >>> [(f.end, f.tuples) for f in w.tick(now=0.4)]  # watermark min(25, 26): [0, 10) fires, with its flight
        [(10.0, ['UA 1545'])]
        """
        self.expected = list(inputs)
        for name in inputs:
            self.waiting[name] = now

    def __len__(self) -> int:
        """Tuples held: waiting for the watermark, or in the engine."""
        return len(self._pending) + len(self.engine)

    def add(self, channel: str, ts: float, item: T, now: float, input: str | None = None) -> bool:  # noqa: A002 - an input, as expect names it
        """Hold ``item`` stamped ``ts`` (seconds) from input ``channel`` (of the bolt's ``input``, see :meth:`expect`); False if it is late (not held)."""
        self.last_arrival = now
        self.seen[channel] = now
        if input is not None and self.waiting:
            self.waiting.pop(input, None)
        if ts < self.watermark:
            self.late += 1
            return False
        if ts > self.newest.get(channel, -math.inf):
            self.newest[channel] = ts
        self._order += 1
        heapq.heappush(self._pending, (ts, self._order, item))
        return True

    def tick(self, now: float) -> list[Firing[T]]:
        """Move the watermark (at processing time ``now``); returns the windows that fired."""
        idle = self.spec.idle_s
        if self.expected and idle is not None and now - self.last_arrival >= idle:
            for name in self.expected:  # quiet: whichever input resumes first must wait for the others again
                self.waiting[name] = now
        mark = self._next_watermark(now)
        if mark <= self.watermark:
            return self.engine.flush() if self._idle(now) and not self._pending else []
        self.watermark = mark
        fired: list[Firing[T]] = []
        pending = self._pending
        while pending and pending[0][0] < mark:
            ts, _, item = heapq.heappop(pending)
            fired += self.engine.add(ts, item)
        fired += self.engine.advance(mark)
        if self._idle(now) and not pending:
            fired += self.engine.flush()
        return fired

    def _idle(self, now: float) -> bool:
        idle = self.spec.idle_s
        return idle is not None and now - self.last_arrival >= idle and len(self) > 0

    def _next_watermark(self, now: float) -> float:
        if not self.newest:
            return self.watermark
        if self._idle(now):  # the stream ended: past every held tuple's last window
            return max(max(self.newest.values()) + _reach(self.spec), self.watermark)
        idle = self.spec.idle_s
        if self.waiting and (idle is None or any(now - named < idle for named in self.waiting.values())):
            return self.watermark  # an input has not been heard from yet
        active = [ts for ch, ts in self.newest.items() if idle is None or now - self.seen[ch] < idle]
        mark = min(active) - self.spec.lag_s if active else -math.inf
        return max(mark, self.watermark)

    def dump(self, ref: Callable[[T], int]) -> dict[str, Any]:
        """Everything but the spec, as JSON-able data, each item replaced by ``ref(item)`` (see :meth:`WindowEngine.dump`)."""
        return {
            "engine": self.engine.dump(ref),
            "watermark": self.watermark,
            "newest": dict(self.newest),
            "seen": dict(self.seen),
            "last_arrival": self.last_arrival,
            "late": self.late,
            "pending": [[ts, order, ref(i)] for ts, order, i in self._pending],
            "order": self._order,
        }

    @classmethod
    def load(cls, spec: WindowSpec, data: dict[str, Any], item: Callable[[int], T]) -> EventTimeWindows[T]:
        """The windows :meth:`dump` saved, items brought back by ``item(ref)``."""
        w: EventTimeWindows[T] = cls(spec)
        w.engine = WindowEngine.load(spec, data["engine"], item)
        w.watermark = float(data["watermark"])
        w.newest = {str(k): float(v) for k, v in data["newest"].items()}
        w.seen = {str(k): float(v) for k, v in data["seen"].items()}
        w.last_arrival = float(data["last_arrival"])
        w.late = int(data["late"])
        w._pending = [(float(ts), int(order), item(r)) for ts, order, r in data["pending"]]
        heapq.heapify(w._pending)
        w._order = int(data["order"])
        return w

    def take_expired(self) -> list[T]:
        """Tuples that can be in no later window, once each (to be acked)."""
        return self.engine.take_expired()

    def held(self) -> list[T]:
        """Every held tuple: waiting, then windowed."""
        return [item for _, _, item in self._pending] + list(self.engine.held())


def _reach(spec: WindowSpec) -> float:
    """How far past a tuple's timestamp time must move for every window holding it to fire (seconds)."""
    reach = 1e-6
    for size in (spec.length, spec.interval):
        if isinstance(size, Duration):
            reach += size.seconds
    return reach
