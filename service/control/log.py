"""The control topics on Kafka (the I/O edge of :mod:`service.control.record`).

=====================  ==========  ================================================================
``squall.__control``   1 part.     compacted; key = topology name, value = TopologyRecord JSON, null = removed;
                                  key = ``<name>/v<code>``: a version of its code (CodeVersion JSON)
``squall.__slots``     SLOTS part. never written; its group ``squall.__supervisors`` splits the slots
``squall.__events``    1 part.     worker starts and exits (JSON, ``schemas/event.schema.json``): task
                                  claims (:mod:`service.control.claims`), crashes for ``squall status``

=====================  ==========  ================================================================

``squall`` is the default *namespace* (``SQUALL_CONTROL_NAMESPACE``): several independent
Squall services can share one Kafka cluster under different namespaces.

Readers keep the last record per key (the embedded broker does not compact, so they must
not rely on it) and know they are caught up from the Fetch high watermark.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition
from pydantic import ValidationError

from service.brokers.access import why_unreachable
from service.brokers.admin import COMPACTED, DAY_MS, deleted_after, ensure_topics
from service.control.record import CodeVersion, TopologyRecord, parse_version_key, version_key
from service.exceptions import BrokerError
from streams.kafka.clients import new_admin, new_consumer, new_producer

log = logging.getLogger("squall.control")

SLOTS = 32
"""Worker slots: partitions of ``squall.__slots``. A topology's worker ``i`` runs on the
supervisor that owns slot ``crc32(name/i) % SLOTS`` (:func:`service.control.slots.slot_of`)."""


@dataclass(frozen=True)
class ControlTopics:
    """The control plane's topic and group names under ``namespace``."""

    namespace: str = "squall"

    @property
    def control(self) -> str:
        """The compacted topic of topology records."""
        return f"{self.namespace}.__control"

    @property
    def slots(self) -> str:
        """The topic whose partitions are the worker slots."""
        return f"{self.namespace}.__slots"

    @property
    def events(self) -> str:
        """The topic of worker events (started, stopped, crashed)."""
        return f"{self.namespace}.__events"

    @property
    def group(self) -> str:
        """The supervisors' group (it splits the slots)."""
        return f"{self.namespace}.__supervisors"


def ensure_control_topics(bootstrap: str, names: ControlTopics, timeout_s: float = 30.0) -> None:
    """Create the control topics if missing. Raises BrokerError naming the broker."""
    ensure_topics(
        bootstrap,
        {names.control: 1, names.slots: SLOTS, names.events: 1},
        timeout_s,
        configs={
            names.control: COMPACTED,  # the latest record per topology
            names.slots: deleted_after(-1),  # never written: its group splits the slots
            names.events: deleted_after(7 * DAY_MS),
        },
    )


def probe(bootstrap: str, timeout_s: float = 5.0) -> None:
    """Raise BrokerError (one line, naming the address) if no broker answers at ``bootstrap``.

    BrokerAccessError if it refuses this client's login or certificate (:mod:`service.brokers.access`).
    """
    admin = new_admin({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise why_unreachable(bootstrap, "control") or BrokerError(f"[control] no Kafka broker answers at {bootstrap} (bootstrap.servers)") from exc


class TopicTail:
    """Reads a one-partition topic from its beginning and knows when it has caught up.

    Caught up means read to the Fetch high watermark (ListOffsets can under-report on the
    embedded broker).

    Args:
      bootstrap: ``bootstrap.servers``.
      topic: the topic.
      overrides: consumer settings (security, ...).
    Not thread-safe: poll from one thread.
    """

    def __init__(self, bootstrap: str, topic: str, overrides: dict[str, Any] | None = None) -> None:
        self.topic = topic
        self.consumer = new_consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"{topic}.reader.{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 50,
                "log_level": 0,
                **(overrides or {}),
            }
        )
        self.consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        self.position = 0

    def _messages(self, timeout_s: float) -> list[Any]:
        out = []
        for msg in self.consumer.consume(1000, timeout_s):
            if not msg.error():
                self.position = (msg.offset() or 0) + 1
                out.append(msg)
        return out

    def high_now(self, timeout_s: float = 1.0) -> int:
        """The partition's high watermark asked of the broker now (one round trip; -1 if it does not answer within ``timeout_s``)."""
        try:
            _, high = self.consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=timeout_s, cached=False)
        except KafkaException:
            return -1
        return int(high) if high is not None else -1

    def caught_up(self) -> bool:
        """True once every record up to the Fetch high watermark has been read."""
        _, high = self.consumer.get_watermark_offsets(TopicPartition(self.topic, 0), cached=True)
        return high is not None and high >= 0 and self.position >= high

    def close(self) -> None:
        """Close the consumer."""
        self.consumer.close()


class ControlLog(TopicTail):
    """A tail of ``squall.__control``: the last record per topology, and the versions of its code."""

    def __init__(self, bootstrap: str, names: ControlTopics, overrides: dict[str, Any] | None = None) -> None:
        super().__init__(bootstrap, names.control, overrides)
        self.records: dict[str, TopologyRecord] = {}
        self.versions: dict[str, dict[int, CodeVersion]] = {}
        """``name -> code -> CodeVersion``: every version of each topology's code (``squall update``)."""

    def _version(self, name: str, code: int, raw: bytes | None, where: str) -> None:
        if raw is None:
            self.versions.get(name, {}).pop(code, None)
            return
        try:
            self.versions.setdefault(name, {})[code] = CodeVersion.model_validate_json(raw)
        except ValidationError as exc:
            log.error("[control] skipping a malformed version %d of %s at %s: %s", code, name, where, exc)

    def poll(self, timeout_s: float = 0.0) -> set[str]:
        """Apply what arrived; returns the names whose record changed (or was removed)."""
        changed: set[str] = set()
        for msg in self._messages(timeout_s):
            key = msg.key()
            if key is None:
                continue
            name = key.decode()
            raw = msg.value()
            version = parse_version_key(name)
            if version is not None:
                self._version(*version, raw, f"{self.topic}[0]@{msg.offset()}")
                continue
            if raw is None:
                self.records.pop(name, None)
            else:
                try:
                    self.records[name] = TopologyRecord.decode(raw)
                except ValidationError as exc:
                    log.error("[control] skipping a malformed record for %s at %s[0]@%s: %s", name, self.topic, msg.offset(), exc)
                    continue
            changed.add(name)
        return changed

    def catch_up(self, timeout_s: float = 15.0) -> dict[str, TopologyRecord]:
        """Read to the high watermark. Raises BrokerError if that takes over ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            got = self.poll(0.1)
            if not got and self.caught_up():
                return self.records
            if time.monotonic() > deadline:
                raise BrokerError(f"[control] could not read {self.topic} to its end within {timeout_s} s")


class EventLog(TopicTail):
    """A tail of ``squall.__events`` from its beginning (the events of every topology)."""

    def __init__(self, bootstrap: str, names: ControlTopics, overrides: dict[str, Any] | None = None) -> None:
        super().__init__(bootstrap, names.events, overrides)

    def poll(self, timeout_s: float = 0.0) -> list[dict[str, Any]]:
        """The events that arrived since the last call (malformed ones are logged and skipped)."""
        out: list[dict[str, Any]] = []
        for msg in self._messages(timeout_s):
            try:
                event = json.loads(msg.value() or b"")
            except ValueError as exc:
                log.error("[control] skipping a malformed event at %s[0]@%s: %s", self.topic, msg.offset(), exc)
                continue
            if isinstance(event, dict):
                out.append(event)
        return out


class ControlWriter:
    """Writes records and tombstones to ``squall.__control`` and events to ``squall.__events``, each confirmed by the broker (raises BrokerError otherwise)."""

    def __init__(self, bootstrap: str, names: ControlTopics, overrides: dict[str, Any] | None = None) -> None:
        self.bootstrap = bootstrap
        self.names = names
        self.producer = new_producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "log_level": 0, **(overrides or {})})

    def _send(self, topic: str, key: str, value: bytes | None) -> None:
        errors: list[str] = []
        self.producer.produce(topic, value, key.encode(), on_delivery=lambda err, _m: errors.append(str(err)) if err else None)
        left = self.producer.flush(15)
        if errors or left:
            raise BrokerError(f"[control] write to {topic} on {self.bootstrap} not confirmed: {errors[0] if errors else 'timed out'}")

    def put(self, rec: TopologyRecord) -> None:
        """Write topology record ``rec`` (confirmed). Raises BrokerError."""
        self._send(self.names.control, rec.name, rec.encode())

    def put_version(self, code: CodeVersion) -> None:
        """Keep a version of a topology's code (confirmed). Raises BrokerError."""
        self._send(self.names.control, code.key, code.encode())

    def remove_version(self, name: str, code: int) -> None:
        """Forget version ``code`` of topology ``name`` (a tombstone). Raises BrokerError."""
        self._send(self.names.control, version_key(name, code), None)

    def remove(self, name: str) -> None:
        """Remove topology ``name`` (a tombstone). Raises BrokerError."""
        self._send(self.names.control, name, None)

    def event(self, topology: str, event: dict[str, Any]) -> None:
        """Write a worker event of ``topology`` (confirmed). Raises BrokerError."""
        self._send(self.names.events, topology, json.dumps({"topology": topology, **event}).encode())
