"""The kit's stand-in for Kafka: an in-memory log of records per topic and partition.

What it replaces, and where it differs from a broker: records are appended at once (no
batching, no linger), never lost, reordered or duplicated by the transport, and kept for
the whole run (no retention). Offsets start at 0 per partition. A producer's
``partition=-1`` means partition 0 (the kit reads external outputs and dead letters as one
sequence). Everything above the transport -- collectors, routing and groupings, the acker
ledger, the wire codecs -- is the runtime's own code (:mod:`streams.testing.local`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Record:
    """One record, shaped as ``confluent_kafka.Message`` (which cannot be built outside a consumer).

    ``headers``: ``[(name, bytes)]`` as a consumer returns them; ``timestamp``: producer time
    in milliseconds (simulated wall time).
    """

    __slots__ = ("_headers", "_key", "_offset", "_partition", "_timestamp", "_topic", "_value")

    def __init__(
        self, topic: str, partition: int, offset: int, value: bytes | None, key: bytes | None = None, headers: Any = None, timestamp_ms: int = 0
    ) -> None:
        self._topic = topic
        self._partition = partition
        self._offset = offset
        self._value = value
        self._key = key
        self._headers = [(k, v.encode() if isinstance(v, str) else v) for k, v in headers] if headers else None
        self._timestamp = timestamp_ms

    def topic(self) -> str:
        """The topic."""
        return self._topic

    def partition(self) -> int:
        """The partition."""
        return self._partition

    def offset(self) -> int:
        """The offset in its partition."""
        return self._offset

    def value(self) -> bytes | None:
        """The value bytes (None: a tombstone)."""
        return self._value

    def key(self) -> bytes | None:
        """The key bytes, if any."""
        return self._key

    def headers(self) -> list[tuple[str, bytes]] | None:
        """``[(name, bytes)]``, or None."""
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        """``(TIMESTAMP_CREATE_TIME, ms)`` as confluent_kafka gives it (1 is CreateTime)."""
        return (1, self._timestamp)

    def error(self) -> None:
        """Never an error: the in-memory log does not fail."""
        return None

    def __len__(self) -> int:
        return len(self._value or b"")

    def __repr__(self) -> str:
        return f"Record({self._topic}[{self._partition}]@{self._offset}, {self._value!r})"


class MemoryLog:
    """Topics of partitions of :class:`Record` lists.

    Args:
      now_ms: gives the timestamp of each appended record (milliseconds).
    """

    def __init__(self, now_ms: Any) -> None:
        self.topics: dict[str, dict[int, list[Record]]] = {}
        self.now_ms = now_ms

    def produce(self, topic: str, value: bytes | None, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
        """Append a record (the runtime's ``produce`` signature: :func:`streams.kafka.clients.produce_fn`)."""
        p = max(partition, 0)
        log = self.topics.setdefault(topic, {}).setdefault(p, [])
        log.append(Record(topic, p, len(log), value, key, headers, int(self.now_ms())))

    def partition(self, topic: str, partition: int) -> Sequence[Record]:
        """The records of ``topic[partition]`` (empty if none were written)."""
        return self.topics.get(topic, {}).get(partition, [])

    def records(self, topic: str) -> list[Record]:
        """Every record of ``topic``, partition by partition."""
        return [r for _, recs in sorted(self.topics.get(topic, {}).items()) for r in recs]

    def end(self, topic: str, partition: int) -> int:
        """The next offset of ``topic[partition]``."""
        return len(self.partition(topic, partition))


class MemoryProducer:
    """A ``confluent_kafka.Producer`` over a :class:`MemoryLog`, for components that open their own (a KafkaBolt).

    ``produce`` appends at once; its ``on_delivery`` callback is served by the next
    ``poll``/``flush``, as librdkafka serves callbacks, with no error (delivery never fails here).
    """

    def __init__(self, log: MemoryLog) -> None:
        self.log = log
        self.callbacks: list[tuple[Any, Record]] = []

    def produce(
        self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int = -1, on_delivery: Any = None, headers: Any = None
    ) -> None:
        """Append a record; ``on_delivery(None, record)`` at the next :meth:`poll`."""
        self.log.produce(topic, value, key, partition, headers)
        if on_delivery is not None:
            self.callbacks.append((on_delivery, self.log.partition(topic, max(partition, 0))[-1]))

    def poll(self, timeout: float = 0) -> int:
        """Serve the delivery callbacks due; returns how many."""
        due, self.callbacks = self.callbacks, []
        for callback, record in due:
            callback(None, record)
        return len(due)

    def flush(self, timeout: float = 0) -> int:
        """Serve every callback; returns 0 (nothing left in the queue)."""
        self.poll()
        return 0

    def __len__(self) -> int:
        return len(self.callbacks)
