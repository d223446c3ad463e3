"""Records a fetch left out: read them again instead of passing over them.

Squall's internal topics (a bolt's input ``squall.T.<bolt>``, the acker ops ``squall.T.__acker``,
the ack results ``squall.T.__ack_result``) are written by plain (non-transactional) producers
and never compacted, so their offsets have no holes: a consumer that reads offset 4201 must
next see 4202. A broker that answers a Fetch at the tail with a *later* batch while an earlier
one is still being written (the embedded broker does this under concurrent producers to one
partition: a bolt's consumer passed over offsets 4201..4901 of 337,526, then a re-read from the
start found every one of them) makes librdkafka move its position past the hole, and the
records in it are never read: with ackers their trees time out and are replayed, without
ackers they are lost. Real Kafka never advances the high watermark past a batch it has not
written, so this never fires there.

:class:`FetchGaps` watches each partition's offsets in consume order. On a hole it asks the
caller to seek the partition back to the first missing offset and drops the partition's
later records of the same consume call (they are fetched again, in order). A hole still there
after ``patience_s`` seconds of fetching again is taken as real (say, a topic a user
compacted) and passed over, with a warning; so is a hole met again more than
``max_refetches`` times, if set (a user's source topic, where compaction and transaction
markers leave real holes: one fetch more per hole, never a stall). Records before the expected offset (a fetch
answered again after a seek) are dropped: they were processed already.

Pure, with an injected clock; the caller seeks. Not thread-safe: one per consumer, used from
the consumer's thread.

Example: offsets 0, 1, then a hole (4 arrives where 2 was due): seek back to 2 and drop the rest
of that call for the partition; the next fetch brings 2..4 in order::

    >>> gaps = FetchGaps("parse", clock=lambda: 0.0)
    >>> M = FakeRecord
    >>> keep, seek = gaps.check([M("t", 0, 0), M("t", 0, 1), M("t", 0, 4), M("t", 0, 5)])
    >>> [m.offset() for m in keep], seek
    ([0, 1], [('t', 0, 2)])
    >>> keep, seek = gaps.check([M("t", 0, 2), M("t", 0, 3), M("t", 0, 4)])
    >>> [m.offset() for m in keep], seek, gaps.refetched
    ([2, 3, 4], [], 1)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from typing_extensions import override

log = logging.getLogger("squall.fetch")

DEFAULT_PATIENCE_S = 2.0
"""How long a hole is fetched again before it is taken as real (seconds)."""


class Record(Protocol):
    """What :class:`FetchGaps` reads of a consumed record (``confluent_kafka.Message``)."""

    def topic(self) -> str | None:
        """The record's topic (None on an error event)."""
        ...

    def partition(self) -> int | None:
        """The record's partition (None on an error event)."""
        ...

    def offset(self) -> int | None:
        """The record's offset (None on an error event)."""
        ...

    def error(self) -> Any:
        """The error of an error event, else None."""
        ...


R = TypeVar("R", bound=Record)


class FakeRecord(Record):
    """A stand-in record for examples and tests: ``FakeRecord(topic, partition, offset)``."""

    def __init__(self, topic: str, partition: int, offset: int, value: bytes = b"") -> None:
        self._t, self._p, self._o, self._v = topic, partition, offset, value

    @override
    def topic(self) -> str:
        return self._t

    @override
    def partition(self) -> int:
        return self._p

    @override
    def offset(self) -> int:
        return self._o

    def value(self) -> bytes:
        """The record's value (bytes)."""
        return self._v

    @override
    def error(self) -> None:
        return None


def consume_available(consumer: Any, n: int, timeout_s: float) -> list[Any]:
    """Up to ``n`` records, returned as soon as one is there (waiting at most ``timeout_s`` seconds for it).

    ``Consumer.consume(n, timeout)`` returns only when it has ``n`` records or the whole
    timeout has passed: below full speed every call waited the timeout out, and every hop
    of a tree paid it (about 20 ms a hop with the 25 ms flush interval, measured on Apache
    Kafka). Here the wait ends at the first record, and what is queued behind it comes
    along without waiting.
    """
    got: list[Any] = consumer.consume(n, 0)
    if got or timeout_s <= 0:
        return got
    first = consumer.poll(timeout_s)
    if first is None:
        return []
    return [first, *consumer.consume(n - 1, 0)] if n > 1 else [first]


class FetchGaps:
    """Per partition, the next offset due; see the module docstring.

    Args:
      component: the component id, for log lines.
      patience_s: how long one hole is fetched again before it is passed over (seconds).
      clock: seconds (monotonic); injectable for tests.
      max_refetches: pass over a hole met again after this many seeks (None: only the
        patience counts).
      single: the consumer reads one partition only (then a consume call that starts at the
        offset due and spans as many offsets as records is taken whole, without a look at
        each record).

    Attributes:
      refetched: seeks asked for (holes met, counting a hole met again after a seek).
      passed_over: holes taken as real after ``patience_s``.
      dropped: records dropped (after a hole in the same call, or already processed).
    """

    def __init__(
        self,
        component: str,
        patience_s: float = DEFAULT_PATIENCE_S,
        clock: Callable[[], float] = time.monotonic,
        single: bool = False,
        max_refetches: int | None = None,
    ) -> None:
        self.component = component
        self.max_refetches = max_refetches
        self.single = single
        self.patience_s = patience_s
        self.clock = clock
        self._next: dict[tuple[str, int], int] = {}
        self._hole_since: dict[tuple[str, int], tuple[int, float, int]] = {}
        self.refetched = 0
        self.passed_over = 0
        self.dropped = 0

    def expect(self, topic: str, partition: int, offset: int) -> None:
        """The partition's next record is ``offset`` (after an assign or a seek by the caller)."""
        self._next[(topic, partition)] = offset
        self._hole_since.pop((topic, partition), None)

    def next_offset(self, topic: str, partition: int) -> int | None:
        """The offset due next on the partition (after the last record returned), or None before the first."""
        return self._next.get((topic, partition))

    def forget(self, topic: str, partition: int) -> None:
        """The partition is no longer read (revoked): no expectation."""
        self._next.pop((topic, partition), None)
        self._hole_since.pop((topic, partition), None)

    def check(self, msgs: Sequence[R]) -> tuple[list[R], list[tuple[str, int, int]]]:
        """Split one consume call's records into those to process and the seeks to make.

        The records to process keep their order; the seeks are ``(topic, partition, offset)``,
        one per partition with a hole. Error records pass through untouched. A partition seen for the first time is
        taken as is (its first offset starts the expectation).
        """
        nxt = self._next
        if msgs and self.single and len(nxt) == 1 and not self._hole_since:
            # Fast path (one partition read, the usual task per executor): the call is whole
            # when it starts at the offset due and spans exactly as many offsets as records.
            first, last = msgs[0], msgs[-1]
            key = (first.topic() or "", first.partition() or 0)
            due = nxt.get(key)
            if due is not None and first.offset() == due and (last.offset() or 0) - due == len(msgs) - 1 and not first.error() and not last.error():
                nxt[key] = due + len(msgs)
                return list(msgs), []
        keep: list[R] = []
        seeks: list[tuple[str, int, int]] = []
        blocked: set[tuple[str, int]] | None = None
        for msg in msgs:
            if msg.error():
                keep.append(msg)
                continue
            key = (msg.topic() or "", msg.partition() or 0)
            off = msg.offset() or 0
            if blocked is not None and key in blocked:
                self.dropped += 1
                continue
            due = nxt.get(key)
            if due is None or off == due:
                nxt[key] = off + 1
                keep.append(msg)
                continue
            if off < due:  # fetched again after a seek: already processed
                self.dropped += 1
                continue
            if self._patient(key, due, off):
                self.refetched += 1
                seeks.append((key[0], key[1], due))
                if blocked is None:
                    blocked = set()
                blocked.add(key)
                self.dropped += 1
                continue
            nxt[key] = off + 1  # a real hole: pass over it
            keep.append(msg)
        for key in list(self._hole_since):
            if nxt.get(key, -1) > self._hole_since[key][0]:
                del self._hole_since[key]  # the hole was filled (or passed over)
        return keep, seeks

    def consume(self, consumer: Any, n: int, timeout_s: float) -> list[Any]:
        """``consumer.consume(n, timeout_s)`` (a ``confluent_kafka.Consumer``) through :meth:`check`.

        Seeks back where a fetch skipped offsets (librdkafka then drops what it had
        prefetched for the partition) and returns the records to process, in order.
        """
        msgs, seeks = self.check(consume_available(consumer, n, timeout_s))
        if seeks:
            from confluent_kafka import TopicPartition

            for topic, partition, offset in seeks:
                consumer.seek(TopicPartition(topic, partition, offset))
                # Not expect(): that forgets the hole, and a real one (a transaction marker)
                # would then be fetched again for ever instead of passed over.
                self._next[(topic, partition)] = offset
        return msgs

    def _patient(self, key: tuple[str, int], due: int, off: int) -> bool:
        now = self.clock()
        since = self._hole_since.get(key)
        if since is None or since[0] != due:
            self._hole_since[key] = (due, now, 1)
            log.info("[%s] a fetch of %s[%d] skipped offsets %d..%d: fetching them again", self.component, key[0], key[1], due, off - 1)
            return True
        if now - since[1] < self.patience_s and (self.max_refetches is None or since[2] < self.max_refetches):
            self._hole_since[key] = (due, since[1], since[2] + 1)
            return True
        self.passed_over += 1
        log.warning(
            "[%s] offsets %d..%d of %s[%d] are still missing after %d fetches again in %.1f s: passing over them",
            self.component,
            due,
            off - 1,
            key[0],
            key[1],
            since[2],
            now - since[1],
        )
        return False
