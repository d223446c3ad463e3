"""Windows of the Stream API (Storm's ``org.apache.storm.streams.windowing.TumblingWindows`` and ``SlidingWindows``).

A window set on a stream applies to the next aggregation or join: ``stream.window(w)``
then ``count_by_key()``, ``reduce_by_key(f)``, ``aggregate(agg)``, ``join(other)``... The
sizes are :class:`~streams.windowing.Count` (tuples) or :class:`~streams.windowing.Duration`
(seconds). Time is processing time unless :meth:`Window.with_timestamp` names the event
time of a value (seconds since the epoch).

>>> w = TumblingWindows.of(Duration(3600.0)).with_timestamp(lambda v: v[1]).with_lag(7200.0)
>>> spec = w.spec(lambda t: t)
>>> spec.tumbling_, spec.hold_s
(True, 14401.0)
>>> SlidingWindows.of(Count(30), Count(10)).spec(lambda t: t).interval
Count(n=10)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self

from streams.windowing.spec import DEFAULT_WATERMARK_INTERVAL_S, Count, Duration, Size, WindowSpec

__all__ = ["Count", "Duration", "SlidingWindows", "TumblingWindows", "Window"]


@dataclass(frozen=True)
class Window:
    """A window's shape and time (what :class:`~streams.windowing.WindowSpec` holds, with the event time read off a value, not a tuple)."""

    length: Size
    interval: Size
    timestamp: Callable[[Any], float] | None = None
    lag_s: float = 0.0
    watermark_interval_s: float = DEFAULT_WATERMARK_INTERVAL_S
    idle_s: float | None = None

    def with_timestamp(self, extract: Callable[[Any], float]) -> Self:
        """Event time: ``extract(value)`` gives a value's time (seconds since the epoch)."""
        return dataclasses.replace(self, timestamp=extract)

    def with_lag(self, seconds: float) -> Self:
        """How far out of order event times may come (seconds; Storm's ``withLag``)."""
        return dataclasses.replace(self, lag_s=seconds)

    def with_watermark_interval(self, seconds: float) -> Self:
        """How often the watermark moves (seconds)."""
        return dataclasses.replace(self, watermark_interval_s=seconds)

    def with_idle_timeout(self, seconds: float) -> Self:
        """After this many seconds without input the stream counts as ended: the last windows fire (seconds)."""
        return dataclasses.replace(self, idle_s=seconds)

    def spec(self, value_of: Callable[[Any], Any]) -> WindowSpec:
        """The :class:`WindowSpec` of a windowed bolt whose tuple's value is ``value_of(tuple)``.

        Raises WindowSpecError for a size below one tuple or 0 s.
        """
        ts: Callable[[Any], float] | None = None
        if self.timestamp is not None:
            extract = self.timestamp

            def ts(t: Any) -> float:
                return float(extract(value_of(t)))

        return WindowSpec(self.length, self.interval, timestamp=ts, lag_s=self.lag_s, watermark_interval_s=self.watermark_interval_s, idle_s=self.idle_s)


class TumblingWindows:
    """Windows that do not overlap (Storm's ``TumblingWindows.of``)."""

    @staticmethod
    def of(length: Size) -> Window:
        """Windows of ``length`` (a Count of tuples or a Duration in seconds), one after the other."""
        return Window(length, length)


class SlidingWindows:
    """Windows of ``length`` every ``interval`` (Storm's ``SlidingWindows.of``)."""

    @staticmethod
    def of(length: Size, interval: Size) -> Window:
        """Windows of ``length``, one starting every ``interval`` (Count or Duration each)."""
        return Window(length, interval)
