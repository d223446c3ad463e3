"""The coordinator topic: a transactional spout's durable state (Storm keeps it in ZooKeeper).

``squall.T.__coordinator`` (one partition, compacted where the broker compacts): key = the
spout's component id, value = :meth:`streams.transactional.coordinator.CoordinatorState.to_json` as JSON.
The spout writes a snapshot, and waits for the broker to confirm it, before it emits a
batch or its commit, and after a commit. Readers keep the last value per key (the embedded
broker does not compact) and read to the high watermark of a Fetch response.
"""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from streams.exceptions import FatalError
from streams.kafka.clients import flush_patiently, new_consumer, new_producer
from streams.transactional.coordinator import CoordinatorState


class CoordinatorStore:
    """Reads and writes one spout's coordinator state.

    Args:
      bootstrap: ``bootstrap.servers``.
      topic: ``squall.<topology>.__coordinator``.
      component: the spout's id (the record key; every error names it).
      kafka: client overrides ``{"consumer": {...}, "producer": {...}}``.
    Raises FatalError (naming the component and topic) when a write fails or the topic cannot
    be read to its end; a broker that is only slow or paused is waited for.
    """

    def __init__(self, bootstrap: str, topic: str, component: str, kafka: dict[str, Any] | None = None) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.component = component
        self.kafka = kafka or {}
        self.producer = new_producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "log_level": 3, **self.kafka.get("producer", {})})

    def load(self, timeout_s: float = 60.0) -> CoordinatorState:
        """The last saved state (a new one if there is none)."""
        c = new_consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"squall.__coordinator.reader.{self.component}",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 50,
                "log_level": 0,
                **self.kafka.get("consumer", {}),
            }
        )
        tp = TopicPartition(self.topic, 0, OFFSET_BEGINNING)
        c.assign([tp])
        last: bytes | None = None
        position = 0
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                for msg in c.consume(1000, 0.1):
                    if msg.error():
                        continue
                    position = (msg.offset() or 0) + 1
                    if (msg.key() or b"").decode() == self.component:
                        last = msg.value()
                _, high = c.get_watermark_offsets(TopicPartition(self.topic, 0), cached=True)
                if high is not None and high >= 0 and position >= high:
                    break
                if time.monotonic() > deadline:
                    raise FatalError(f"[{self.component}] could not read {self.topic} to its end within {timeout_s:g} s")
        finally:
            c.close()
        if last is None:
            return CoordinatorState()
        try:
            return CoordinatorState.from_json(json.loads(last))
        except (ValueError, KeyError, TypeError) as exc:
            raise FatalError(f"[{self.component}] unreadable coordinator state in {self.topic}: {exc}") from exc

    def save(self, snapshot: dict[str, Any]) -> None:
        """Write ``snapshot`` and wait for the broker's confirmation."""
        errors: list[str] = []
        self.producer.produce(
            self.topic, json.dumps(snapshot).encode(), self.component.encode(), on_delivery=lambda err, _m: errors.append(str(err)) if err else None
        )
        flush_patiently(self.producer, self.component, f"coordinator state in {self.topic}")
        if errors:
            raise FatalError(f"[{self.component}] coordinator state not confirmed by {self.topic}: {errors[0]}")
