"""When to restart a crashed worker, and when to give up (pure; injected clock).

A worker that exits unexpectedly is restarted after ``initial_s``, doubling up to
``max_s``. After ``give_up_after`` crashes within ``window_s`` the supervisor gives up on
it and reports the component and the last lines of its log.

>>> policy = RestartPolicy(initial_s=1.0, max_s=8.0, give_up_after=3, window_s=60.0)
>>> h = CrashHistory(policy)
>>> [h.crashed(now) for now in (0.0, 10.0, 20.0)]
[1.0, 2.0, None]
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class RestartPolicy:
    """Backoff for crashed workers (seconds): ``initial_s`` doubling to ``max_s``; give up after ``give_up_after`` crashes within ``window_s``."""

    initial_s: float = 1.0
    max_s: float = 30.0
    give_up_after: int = 5
    window_s: float = 300.0


class CrashHistory:
    """The crashes of one worker slot (topology, worker index)."""

    def __init__(self, policy: RestartPolicy) -> None:
        self.policy = policy
        self.crashes: deque[float] = deque()
        self.total = 0

    def crashed(self, now: float) -> float | None:
        """Record a crash at ``now``; the delay before the restart (seconds), or ``None`` to give up."""
        self.total += 1
        self.crashes.append(now)
        while self.crashes and self.crashes[0] < now - self.policy.window_s:
            self.crashes.popleft()
        n = len(self.crashes)
        if n >= self.policy.give_up_after:
            return None
        return float(min(self.policy.max_s, self.policy.initial_s * 2 ** (n - 1)))
