"""Reading bolt tasks' progress records (``squall.T.__progress``; :mod:`streams.monitoring.bolt_progress`)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from streams.kafka.clients import at_high_watermarks, new_consumer
from streams.monitoring.bolt_progress import Progress, decode_progress, newest_lives, parse_progress_key
from streams.wire.naming import progress_topic


class TaskLives(dict[int, Progress]):
    """Each task's progress, its newest life's (``task -> Progress``); ``stale``: the keys of older lives, which the new life deletes.

    >>> lives = TaskLives({}, [b"count:3:100", b"count:4:100", b"count:3"])
    >>> lives.stale_of("count", {3})
    [b'count:3:100', b'count:3']
    """

    def __init__(self, lives: dict[int, Progress], stale: list[bytes]) -> None:
        super().__init__(lives)
        self.stale = stale

    def stale_of(self, component: str, tasks: set[int]) -> list[bytes]:
        """The older lives' keys of ``component``'s ``tasks`` (global ids): the ones their new owner deletes."""
        return [key for key in self.stale if (parse_progress_key(key, component) or (-1, None))[0] in tasks]


def read_progress(bootstrap: str, topology: str, component: str, overrides: dict[str, Any] | None = None, timeout_s: float = 30.0) -> TaskLives:
    """The newest life's last progress record of each task of ``component`` (:func:`~streams.monitoring.bolt_progress.newest_lives`).

    Read to the end of the (compacted, one-partition) topic. A record that does not decode is
    skipped; a replaced owner's record that landed after its successor's is not taken.
    Returns what was read if the end is not reached within ``timeout_s`` seconds
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
    records: list[tuple[bytes, bytes | None]] = []
    try:
        if topic not in c.list_topics(timeout=10).topics:  # a topology submitted before Squall wrote progress
            return TaskLives({}, [])
        tps = [TopicPartition(topic, 0)]
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        quiet, deadline = 0.0, time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            msgs = c.consume(1000, 0.1)
            for m in msgs:
                key = m.key() or b""
                if m.error() or not key.startswith(prefix):
                    continue
                records.append((key, m.value()))
            quiet = 0.0 if msgs else quiet + 0.1
            if quiet >= 0.2 and at_high_watermarks(c, tps):
                break
    except KafkaException:
        pass
    finally:
        c.close()
    return TaskLives(*newest_lives(records, component, lambda value: decode_progress(value, component=component, topic=topic, partition=0, offset=-1)))
