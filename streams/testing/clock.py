"""Simulated time for the test kit: ticks, timeouts, replay backoff and windows advance without sleeping.

Storm's ``Time.startSimulating`` / ``advanceTime``: every clock the runtime reads in a kit
run is this object's, so a test says how much time passes, and nothing sleeps.

    >>> t = SimulatedTime()
    >>> t.monotonic(), t.wall() == SimulatedTime.EPOCH
    (0.0, True)
    >>> t.advance(2.5)
    >>> t.monotonic(), t.wall() - SimulatedTime.EPOCH
    (2.5, 2.5)

Time is kept in whole nanoseconds (:attr:`SimulatedTime.ns`), so steps add up exactly:
sixty steps of 0.1 s are 6 s, not 5.999999999999998.

    >>> t = SimulatedTime()
    >>> for _ in range(240):
    ...     t.advance(0.1)
    >>> t.now, t.ns
    (24.0, 24000000000)
"""

from __future__ import annotations

NS_PER_S = 1_000_000_000


def to_ns(seconds: float) -> int:
    """``seconds`` as whole nanoseconds (rounded to the nearest).

    >>> to_ns(0.1), to_ns(6.0)
    (100000000, 6000000000)
    """
    return round(seconds * NS_PER_S)


class SimulatedTime:
    """Two views of one simulated clock, both in seconds, kept as whole nanoseconds since the start.

    ``monotonic()`` starts at 0 (the runtime's ``time.monotonic`` users: the spout's timeouts,
    replay backoff, checkpoint intervals); ``wall()`` starts at ``start`` (default
    :data:`EPOCH`; the ``time.time`` users: the acker's tree start times, processing-time
    windows).

    Raises ValueError on a negative :meth:`advance`.
    """

    EPOCH = 1_700_000_000.0
    """Where ``wall()`` starts by default: 2023-11-14T22:13:20Z, any fixed date would do."""

    def __init__(self, start: float = EPOCH) -> None:
        self.start = start
        self.ns = 0
        """Simulated nanoseconds since the start (an int: the exact clock)."""

    @property
    def now(self) -> float:
        """Simulated seconds since the start (``ns / 1e9``): what tests compare, e.g. ``assert 10.0 <= squall_time.now``."""
        return self.ns / NS_PER_S

    def monotonic(self) -> float:
        """Seconds since the start."""
        return self.now

    def wall(self) -> float:
        """Seconds since the Unix epoch, simulated."""
        return self.start + self.now

    def advance(self, seconds: float) -> None:
        """Move time forward ``seconds`` (>= 0).

        Nothing runs here: :meth:`streams.testing.LocalTopology.advance` advances in steps
        and lets the topology run between them.
        """
        if seconds < 0:
            raise ValueError(f"simulated time cannot go back ({seconds} s)")
        self.ns += to_ns(seconds)

    def __repr__(self) -> str:
        return f"SimulatedTime(t={self.now:g} s)"
