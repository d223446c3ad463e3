"""Worker slots: how supervisors split the workers among themselves through a Kafka group.

Every supervisor is a consumer in group ``squall.__supervisors`` subscribed to
``squall.__slots`` (:data:`service.control_log.SLOTS` partitions, never written). The
partitions Kafka assigns it are its slots, and it runs exactly the workers whose slot it
owns. A supervisor that joins, leaves or dies (its session times out) moves slots, and so
workers, by an ordinary group rebalance: no cluster manager of our own.

>>> slot_of("wordcount", 0) == slot_of("wordcount", 0) and 0 <= slot_of("wordcount", 1) < 32
True
"""

from __future__ import annotations

import logging
import zlib
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from service.control_log import SLOTS, ControlTopics

log = logging.getLogger("squall.slots")


def slot_of(topology: str, worker: int, slots: int = SLOTS) -> int:
    """The slot of ``topology``'s worker ``worker``: ``crc32("<topology>/<worker>") % slots``."""
    return zlib.crc32(f"{topology}/{worker}".encode()) % slots


class SlotMembership:
    """This supervisor's membership in ``squall.__supervisors``: the slots it owns.

    Args:
      bootstrap: ``bootstrap.servers``.
      supervisor_id: names this supervisor in logs (``group.instance.id`` is not used:
        a supervisor that dies must lose its slots after one session timeout).
      session_timeout_ms: how long a dead supervisor keeps its slots (ms).
      overrides: consumer settings (security, ...).
    Call :meth:`poll` often (it heartbeats). Not thread-safe.
    """

    def __init__(
        self, bootstrap: str, supervisor_id: str, names: ControlTopics, session_timeout_ms: int = 6000, overrides: dict[str, Any] | None = None
    ) -> None:
        self.supervisor_id = supervisor_id
        self.owned: set[int] = set()
        self.joined = False
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": names.group,
                "session.timeout.ms": session_timeout_ms,
                "heartbeat.interval.ms": max(500, session_timeout_ms // 6),
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 50,
                "log_level": 0,
                **(overrides or {}),
            }
        )
        self.consumer.subscribe([names.slots], on_assign=self._on_assign, on_lost=self._on_lost)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.owned = {tp.partition for tp in partitions}
        self.joined = True
        log.info("[supervisor %s] owns slots %s", self.supervisor_id, sorted(self.owned))

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.owned = set()
        log.warning("[supervisor %s] lost its slots (session expired)", self.supervisor_id)

    def poll(self) -> None:
        """Serve heartbeats and rebalance callbacks (nothing is ever fetched)."""
        self.consumer.consume(1, 0)

    def close(self) -> None:
        """Leave the group at once, so the other supervisors take the slots."""
        self.consumer.close()
