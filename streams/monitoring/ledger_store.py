"""Reading spout task ledgers from ``squall.T.__ledger`` (the Kafka edge of :mod:`streams.monitoring.spout_ledger`).

Partition *i* holds only spout task *i*'s records (key ``component:task``, compacted on a
real Kafka), so a task's latest ledger is among the last records of its partition: a reader
seeks to ``high watermark - TAIL`` and keeps the newest record that parses.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import TopicPartition

from streams.exceptions import DecodeError
from streams.kafka.clients import new_consumer, true_end_offsets
from streams.monitoring.spout_ledger import TaskLedger
from streams.wire.codec import decode_json

log = logging.getLogger("squall.ledger")

TAIL = 20
"""Records read from the end of each partition (a malformed last record is skipped)."""


def ledger_key(component: str, task_id: int) -> bytes:
    """The record key of task ``task_id``'s ledger."""
    return f"{component}:{task_id}".encode()


def parse_ledger(value: bytes | None, *, component: str, topic: str, partition: int, offset: int) -> TaskLedger:
    """Decode one ledger record read by ``component``. Raises DecodeError naming the record."""
    try:
        data: Any = decode_json(value or b"")
    except ValueError as exc:
        raise DecodeError(f"not JSON: {exc}", component=component, topic=topic, partition=partition, offset=offset) from exc
    return TaskLedger.from_json(data, reader=component, topic=topic, partition=partition, offset=offset)


def read_ledgers(
    bootstrap: str, topic: str, partitions: list[int], *, component: str, overrides: Mapping[str, Any] | None = None, timeout_s: float = 10.0
) -> dict[int, TaskLedger]:
    """The latest ledger of each task in ``partitions`` that has one: ``{task_id: ledger}``.

    Args:
      bootstrap: ``bootstrap.servers``.
      topic: ``squall.T.__ledger``.
      partitions: spout global task ids.
      component: named in log lines and errors.
      overrides: consumer settings (security settings included).
      timeout_s: how long to wait for the partitions' ends (seconds).

    Raises:
      TimeoutError: naming ``component`` if the partitions' ends are not known in time.
    """
    ends = true_end_offsets(bootstrap, [(topic, p) for p in partitions], timeout_s, component=component, overrides=overrides)
    todo = {p: end for (_, p), end in ends.items() if end > 0}
    out: dict[int, TaskLedger] = {}
    if not todo:
        return out
    settings = {"bootstrap.servers": bootstrap, "group.id": "squall.__ledger", "enable.auto.commit": False, "fetch.wait.max.ms": 50, "log_level": 0}
    c = new_consumer({**settings, **(overrides or {})})
    try:
        c.assign([TopicPartition(topic, p, max(0, end - TAIL)) for p, end in todo.items()])
        deadline = time.monotonic() + timeout_s
        while todo and time.monotonic() < deadline:
            for msg in c.consume(1000, 0.1):
                if msg.error():
                    continue
                p, off = msg.partition() or 0, msg.offset() or 0
                try:
                    ledger = parse_ledger(msg.value(), component=component, topic=topic, partition=p, offset=off)
                except DecodeError as exc:
                    log.warning("[%s] skipping a ledger record: %s", component, exc)
                else:
                    if ledger.newer_than(out.get(p)):
                        out[p] = ledger
                if off + 1 >= todo.get(p, 0):
                    todo.pop(p, None)
        if todo:
            log.warning("[%s] ledger partitions %s not read to their end in %s s", component, sorted(todo), timeout_s)
        return out
    finally:
        c.close()
