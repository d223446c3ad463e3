"""Simulated time for the test kit: ticks, timeouts, replay backoff and windows advance without sleeping.

Storm's ``Time.startSimulating`` / ``advanceTime``: every clock the runtime reads in a kit
run is this object's, so a test says how much time passes, and nothing sleeps.

    >>> t = SimulatedTime()
    >>> t.monotonic(), t.wall() == SimulatedTime.EPOCH
    (0.0, True)
    >>> t.advance(2.5)
    >>> t.monotonic(), t.wall() - SimulatedTime.EPOCH
    (2.5, 2.5)
"""

from __future__ import annotations


class SimulatedTime:
    """Two views of one simulated clock, both in seconds.

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
        self.now = 0.0
        """Simulated seconds since the start."""

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
        self.now += seconds

    def __repr__(self) -> str:
        return f"SimulatedTime(t={self.now:g} s)"
