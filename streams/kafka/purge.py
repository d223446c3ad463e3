"""Purge what a consumer group has committed, with DeleteRecords (Kafka Streams' repartition-topic purge).

A topic between Squall's components has exactly one consumer group (a bolt's input, the
acker ops, the ack results), so once that group has committed an offset, nothing will ever
read below it again. Deleting those records keeps each topic about as large as its consumer
lag, not as large as its retention: a service that runs for months on 1,500 lines a second
stays within a few segments per partition. Kafka Streams does the same for its repartition
topics (``repartition.purge.interval.ms``, 30 s).

Protocol, per executor (steps marked in :meth:`Purger.committed` and :meth:`Purger.maybe_purge`):

1. After each successful offset commit, the executor reports the committed offsets.
2. At most once per ``squall.topic.purge.interval.secs``, the purger asks the broker to
   delete every reported partition's records below its committed offset. Only offsets that
   moved since the last purge are sent, and the request does not wait for the answer.
3. Answers are read at the next call: deleted records are counted (``purged_records``), an
   error is logged with the component and partition and retried at the next interval.
4. A broker that cannot delete records (the embedded broker closes the connection) turns
   purging off for this executor, said once in the log.

Example (the broker-free part: what a purge would send)::

    >>> p = Purger("count", interval_s=30.0, admin=None)
    >>> p.committed([("squall.wc.count", 0, 120), ("squall.wc.count", 1, 7)])
    >>> p.due_offsets()
    {('squall.wc.count', 0): 120, ('squall.wc.count', 1): 7}
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from streams.wire.naming import TP

log = logging.getLogger("squall.purge")

UNSUPPORTED = ("UNSUPPORTED_VERSION", "Broker: Unsupported version", "_TRANSPORT", "Disconnected")
"""Errors that say the broker cannot delete records (a first failure like this turns purging off)."""


class Purger:
    """Deletes the committed records of one executor's input partitions (see the module docstring).

    Args:
      component: the executor's component id, for log lines.
      interval_s: at most one purge request per this many seconds (0: never purge).
      admin: an AdminClient (``delete_records``), or None to only keep the books (tests, the
        embedded broker).
      clock: monotonic seconds (injected in tests).
    Not thread-safe: the executor's thread calls it.
    """

    def __init__(self, component: str, interval_s: float, admin: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self.component = component
        self.interval_s = interval_s
        self.admin = admin
        self.clock = clock
        self.enabled = interval_s > 0 and admin is not None
        self.purged_records = 0
        """Records deleted so far (what the answers reported)."""
        self.failures = 0
        """Purge requests that failed (each is retried at the next interval)."""
        self._committed: dict[TP, int] = {}
        self._purged: dict[TP, int] = {}
        self._low: dict[TP, int] = {}
        self._pending: dict[Any, Any] = {}
        self._next_at = clock() + interval_s

    def committed(self, offsets: Iterable[tuple[str, int, int]]) -> None:
        """Step 1: the group committed these ``(topic, partition, offset)`` (the next offset to read)."""
        for topic, partition, offset in offsets:
            if offset > self._committed.get((topic, partition), -1):
                self._committed[(topic, partition)] = offset

    def due_offsets(self) -> dict[TP, int]:
        """The partitions whose committed offset moved since their last purge, with that offset."""
        return {tp: off for tp, off in self._committed.items() if off > self._purged.get(tp, 0)}

    def maybe_purge(self, now: bool = False) -> int:
        """Steps 2-4: read earlier answers; send a new request if one is due (``now``: whatever the interval). Returns the partitions asked."""
        self._collect()
        if not self.enabled or self._pending or (self.clock() < self._next_at and not now):
            return 0
        self._next_at = self.clock() + self.interval_s
        due = self.due_offsets()
        if not due:
            return 0
        from confluent_kafka import TopicPartition

        try:
            self._pending = self.admin.delete_records([TopicPartition(t, p, off) for (t, p), off in due.items()], request_timeout=10.0, operation_timeout=0)
        except Exception as exc:  # a local error: retried at the next interval
            self.failures += 1
            log.warning("[%s] purge of %d partitions not sent: %s", self.component, len(due), exc)
            return 0
        for tp, off in due.items():
            self._purged[tp] = off
        return len(due)

    def _collect(self) -> None:
        """Step 3: count what finished; log failures; turn purging off on a broker that cannot purge."""
        done = [tp for tp, fut in self._pending.items() if fut.done()]
        for tp in done:
            fut = self._pending.pop(tp)
            key = (tp.topic, tp.partition)
            try:
                low = int(fut.result().low_watermark)
            except Exception as exc:
                self.failures += 1
                self._purged.pop(key, None)  # ask again next time
                if any(u in str(exc) for u in UNSUPPORTED) and not self.purged_records:
                    self.enabled = False
                    log.warning("[%s] the broker cannot delete records (%s): purging is off for this executor", self.component, exc)
                else:
                    log.warning("[%s] purge of %s[%d] failed (retried in %.0f s): %s", self.component, tp.topic, tp.partition, self.interval_s, exc)
                continue
            before = self._low.get(key, 0)
            if low > before:
                self.purged_records += low - before
                self._low[key] = low

    def close(self, timeout_s: float = 2.0) -> None:
        """Purge what the last commit confirmed, wait a little for the answers (their counts), then stop."""
        deadline = self.clock() + timeout_s
        self._wait(deadline)
        self.maybe_purge(now=True)
        self._wait(deadline)

    def _wait(self, deadline: float) -> None:
        while self._pending and self.clock() < deadline:
            time.sleep(0.05)
            self._collect()
