"""Reading bolt tasks' progress records (``squall.T.__progress``; :mod:`streams.monitoring.bolt_progress`)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from streams.exceptions import DecodeError
from streams.kafka.clients import at_high_watermarks, new_consumer
from streams.monitoring.bolt_progress import Progress, decode_progress
from streams.wire.naming import progress_topic


def read_progress(bootstrap: str, topology: str, component: str, overrides: dict[str, Any] | None = None, timeout_s: float = 30.0) -> dict[int, Progress]:
    """The last progress record of each task of ``component``: ``task -> Progress``.

    Read to the end of the (compacted, one-partition) topic. A record that does not decode is
    skipped. Returns what was read if the end is not reached within ``timeout_s`` seconds
    (re-executions are then undercounted, never invented).
    """
    topic = progress_topic(topology)
    prefix = f"{component}:".encode()
    c = new_consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"squall.{topology}.__progress.{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "log_level": 0,
            **(overrides or {}),
        }
    )
    out: dict[int, Progress] = {}
    try:
        if topic not in c.list_topics(timeout=10).topics:  # a topology submitted before Squall wrote progress
            return out
        tps = [TopicPartition(topic, 0)]
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        quiet, deadline = 0.0, time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            msgs = c.consume(1000, 0.1)
            for m in msgs:
                key = m.key() or b""
                if m.error() or not key.startswith(prefix):
                    continue
                try:
                    out[int(key[len(prefix) :])] = decode_progress(m.value(), component=component, topic=topic, partition=0, offset=m.offset() or 0)
                except (DecodeError, ValueError):
                    continue
            quiet = 0.0 if msgs else quiet + 0.1
            if quiet >= 0.2 and at_high_watermarks(c, tps):
                break
    except KafkaException:
        pass
    finally:
        c.close()
    return out
