"""Replay scheduling with exponential backoff (storm-kafka-client's KafkaSpoutRetryExponentialBackoff), pure logic with an injectable clock."""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RetryPolicy:
    """Delay before replay number ``n`` (1-based): ``initial * multiplier**(n-1)`` capped at ``max_delay`` (seconds).

    After ``max_retries`` replays a record is dead-lettered.
    """

    initial_delay_s: float = 0.0
    multiplier: float = 2.0
    max_delay_s: float = 10.0
    max_retries: int = 5

    def delay(self, attempt: int) -> float:
        """Seconds to wait before replay number ``attempt`` (1-based; 0 before the first failure)."""
        if attempt <= 0 or self.initial_delay_s <= 0:
            return 0.0
        return min(self.max_delay_s, self.initial_delay_s * self.multiplier ** (attempt - 1))

    def exhausted(self, failures: int) -> bool:
        """True when a record that failed ``failures`` times must not be replayed again."""
        return failures > self.max_retries


class RetryQueue:
    """Failed messages waiting for their backoff to elapse, earliest first."""

    def __init__(self, policy: RetryPolicy, clock: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy
        self.clock = clock
        self._heap: list[tuple[float, int, Any]] = []
        self._seq = itertools.count()

    def schedule(self, item: Any, failures: int) -> float:
        """Queue ``item`` after its ``failures``-th failure; returns the due time."""
        due = self.clock() + self.policy.delay(failures)
        heapq.heappush(self._heap, (due, next(self._seq), item))
        return due

    def pop_due(self) -> Any | None:
        """The earliest queued item whose backoff has elapsed, removed from the queue; None if none is due."""
        if self._heap and self._heap[0][0] <= self.clock():
            return heapq.heappop(self._heap)[2]
        return None

    def __len__(self) -> int:
        return len(self._heap)
