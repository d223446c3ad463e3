"""What a window is: its length and sliding interval, by tuple count or by time (Storm's ``BaseWindowedBolt.Count``/``Duration``).

Storm's docs/Windowing.md, in Python:

* ``WindowSpec(length=Count(30), interval=Count(10))``: the last 30 tuples, every 10 tuples;
* ``WindowSpec(length=Duration(20.0), interval=Duration(10.0))``: 20 s, every 10 s;
* ``WindowSpec.tumbling(Duration(5.0))``: 5 s windows that do not overlap;
* the two kinds mix (the last 100 tuples every 5 s).

Times are seconds. By default the time is the processing time (when the bolt received the
tuple); with ``timestamp`` set it is the event time carried by the tuple, and windows move
with a watermark (:mod:`streams.windowing.watermark`).

>>> spec = WindowSpec(Duration(20.0), Duration(10.0))
>>> spec.hold_s, spec.tumbling_
(30.0, False)
>>> WindowSpec.tumbling(Count(3)).interval
Count(n=3)
>>> WindowSpec(Count(0), Count(1))
Traceback (most recent call last):
...
streams.windowing.exceptions.WindowSpecError: window length must be >= 1 tuple, got Count(n=0)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streams.windowing.exceptions import WindowSpecError


@dataclass(frozen=True, slots=True)
class Count:
    """A number of tuples (Storm's ``BaseWindowedBolt.Count``)."""

    n: int


@dataclass(frozen=True, slots=True)
class Duration:
    """A span of time in seconds (Storm's ``BaseWindowedBolt.Duration``)."""

    seconds: float


Size = Count | Duration

DEFAULT_WATERMARK_INTERVAL_S = 1.0
"""How often the watermark moves, and event-time windows are evaluated (seconds; Storm's default)."""

DEFAULT_MAX_TUPLES = 1_000_000
"""Tuples one task's window may hold before it fails new ones (count)."""


@dataclass(frozen=True, slots=True)
class WindowSpec:
    """A window's shape.

    Args:
      length: the tuples a window holds: the last ``Count(n)``, or those of the last ``Duration(s)``.
      interval: how often a window is evaluated: every ``Count(n)`` tuples or ``Duration(s)``
        seconds (default ``Count(1)``: every tuple, as Storm's ``withWindow(length)``).
      timestamp: event time: a field name, or ``f(tuple) -> seconds``; None: processing time.
      lag_s: event time only: how far out of order timestamps may be (seconds, Storm's ``withLag``).
      watermark_interval_s: event time: how often the watermark moves (seconds).
      late_stream: event time: the stream late tuples are emitted on (None: they are acked and counted).
      idle_s: after this many seconds without input, the stream counts as ended: event time
        fires every window holding tuples, a Count interval fires its last (partial) window,
        and the held tuples are acked (:meth:`~streams.windowing.engine.WindowEngine.flush`).
        None: windows wait for newer tuples (a processing-time Duration interval fires on its timer anyway).
      max_tuples: tuples one task may hold; beyond it new tuples are failed (replayed later).

    Raises WindowSpecError for a size below 1 tuple or 0 s, or event-time options without ``timestamp``.
    """

    length: Size
    interval: Size = Count(1)
    timestamp: str | Callable[[Any], float] | None = None
    lag_s: float = 0.0
    watermark_interval_s: float = DEFAULT_WATERMARK_INTERVAL_S
    late_stream: str | None = None
    idle_s: float | None = None
    max_tuples: int = DEFAULT_MAX_TUPLES

    def __post_init__(self) -> None:
        for what, size in (("length", self.length), ("interval", self.interval)):
            if isinstance(size, Count) and size.n < 1:
                raise WindowSpecError(f"window {what} must be >= 1 tuple, got {size}")
            if isinstance(size, Duration) and not size.seconds > 0:
                raise WindowSpecError(f"window {what} must be > 0 s, got {size}")
            if not isinstance(size, Count | Duration):
                raise WindowSpecError(f"window {what} must be Count(n) or Duration(seconds), got {size!r}")
        if self.timestamp is None and (self.lag_s or self.late_stream is not None):
            raise WindowSpecError("lag_s and late_stream need event time: set timestamp (a field name or a function)")
        if self.lag_s < 0 or not self.watermark_interval_s > 0 or (self.idle_s is not None and not self.idle_s > 0):
            raise WindowSpecError(
                f"lag_s must be >= 0, watermark_interval_s and idle_s > 0 (seconds), got {self.lag_s}, {self.watermark_interval_s}, {self.idle_s}"
            )
        if self.max_tuples < 1:
            raise WindowSpecError(f"max_tuples must be >= 1, got {self.max_tuples}")

    @classmethod
    def tumbling(cls, length: Size, **options: Any) -> WindowSpec:
        """Windows that do not overlap: evaluated every ``length`` (Storm's ``withTumblingWindow``)."""
        return cls(length, length, **options)

    @property
    def tumbling_(self) -> bool:
        """True when each tuple is in one window at most (interval equals length)."""
        return self.length == self.interval

    @property
    def event_time(self) -> bool:
        """True when windows follow the tuples' timestamps rather than the clock."""
        return self.timestamp is not None

    @property
    def hold_s(self) -> float:
        """Seconds a tuple may wait in the window before it is acked.

        That is length + interval, for each given as a Duration (Storm's check against ``topology.message.timeout.secs``);
        event time adds the lag and one watermark interval.
        """
        held = sum(s.seconds for s in (self.length, self.interval) if isinstance(s, Duration))
        if held and self.event_time:
            held += self.lag_s + self.watermark_interval_s
        return held

    @property
    def hold_count(self) -> int:
        """Tuples one task holds before a window can fire: length + interval, for each given as a Count."""
        return sum(s.n for s in (self.length, self.interval) if isinstance(s, Count))
