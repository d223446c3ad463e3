"""Worker slots: how supervisors split the workers among themselves through a Kafka group.

Every supervisor is a consumer in group ``squall.__supervisors`` subscribed to
``squall.__slots`` (:data:`service.control.log.SLOTS` partitions, never written). The
partitions Kafka assigns it are its slots, and it runs exactly the workers whose slot it
owns. A supervisor that joins, leaves or dies (its session times out) moves slots, and so
workers, by an ordinary group rebalance: no cluster manager of our own.

>>> slot_of("wordcount", 0) == slot_of("wordcount", 0) and 0 <= slot_of("wordcount", 1) < 32
True
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from service.control.log import SLOTS, ControlTopics
from streams.kafka.clients import new_consumer

log = logging.getLogger("squall.slots")


def slot_of(topology: str, worker: int, slots: int = SLOTS) -> int:
    """The slot of ``topology``'s worker ``worker``: ``crc32("<topology>/<worker>") % slots``."""
    return zlib.crc32(f"{topology}/{worker}".encode()) % slots


class SlotTable:
    """The slots a supervisor owns and since when (pure: the caller gives the time).

    A slot gained in a rebalance starts its workers only after ``settle_s`` seconds, so
    that the previous owner, which may not have seen the rebalance yet, starts nothing more
    there and its ``started`` events are read first. During a rebalance (between a revoke
    and the next assignment) nothing starts, but what runs keeps running: most slots come
    back.

    >>> t = SlotTable(settle_s=2.0)
    >>> t.assigned({1, 2}, now=0.0); t.startable(now=1.0), t.startable(now=2.0)
    (set(), {1, 2})
    >>> t.revoked(); t.owned, t.startable(now=3.0)
    ({1, 2}, set())
    >>> t.assigned({2, 3}, now=3.0); t.startable(now=4.0)
    {2}
    """

    def __init__(self, settle_s: float = 2.0) -> None:
        self.settle_s = settle_s
        self.owned: set[int] = set()
        self.gained_at: dict[int, float] = {}
        self.rebalancing = False
        self.assignments = 0
        """How many assignments it has had."""
        self.assigned_at: float | None = None
        """When the last one came (monotonic seconds; a supervisor back from a long cut counts its slots again from its next one)."""

    def assigned(self, slots: set[int], now: float) -> None:
        """The group gave this supervisor ``slots`` at ``now`` (monotonic seconds)."""
        self.gained_at = {p: self.gained_at.get(p, now) if p in self.owned else now for p in slots}
        self.owned = set(slots)
        self.rebalancing = False
        self.assignments += 1
        self.assigned_at = now

    def revoked(self) -> None:
        """A rebalance started: start nothing until the next assignment."""
        self.rebalancing = True

    def startable(self, now: float) -> set[int]:
        """Owned slots whose workers may start now."""
        if self.rebalancing:
            return set()
        return {p for p in self.owned if now - self.gained_at.get(p, now) >= self.settle_s}


def vouched_slots(table: SlotTable, contact_held: bool, long_gap_ended: float | None) -> int:
    """How many slots a supervisor can vouch for owning (``squall_supervisor_slots``), so that all supervisors' never add up to more than there are.

    None while cut off from the broker (``contact_held`` False: after the session timeout the
    group gives them to others), while a rebalance is under way, and, back from a silence longer
    than the session that ended at ``long_gap_ended`` (monotonic seconds; None: none), until an
    assignment after it.

    >>> t = SlotTable(); t.assigned({1, 2, 3}, now=10.0)
    >>> vouched_slots(t, True, None), vouched_slots(t, False, None), vouched_slots(t, True, long_gap_ended=50.0)
    (3, 0, 0)
    >>> t.revoked(); vouched_slots(t, True, None)
    0
    >>> t.assigned({4}, now=53.0); vouched_slots(t, True, long_gap_ended=50.0)
    1
    """
    if not contact_held or table.rebalancing:
        return 0
    if long_gap_ended is not None and (table.assigned_at is None or table.assigned_at < long_gap_ended):
        return 0
    return len(table.owned)


class SlotMembership:
    """This supervisor's membership in ``squall.__supervisors``: the slots it owns.

    Args:
      bootstrap: ``bootstrap.servers``.
      supervisor_id: names this supervisor in logs and is its ``client.id``
        (``group.instance.id`` is not used: a supervisor that dies must lose its slots after
        one session timeout).
      session_timeout_ms: how long a dead supervisor keeps its slots (ms).
      overrides: consumer settings (security, ...).
      settle_s: see :class:`SlotTable` (seconds).
      clock: monotonic seconds.
    Call :meth:`poll` often (it heartbeats). Not thread-safe.

    It never leaves the group explicitly: on the embedded broker, a member that leaves while
    the group is forming and is its leader wedges the group for good (every later SyncGroup
    fails with "rebalance in progress"; the coordinator keeps the departed leader). A
    supervisor that stops therefore just stops heartbeating, and the others take its slots
    after one session timeout, as after a crash.
    """

    def __init__(
        self,
        bootstrap: str,
        supervisor_id: str,
        names: ControlTopics,
        session_timeout_ms: int = 6000,
        overrides: dict[str, Any] | None = None,
        settle_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.supervisor_id = supervisor_id
        self.clock = clock
        self.table = SlotTable(settle_s)
        self.joined = False
        self.consumer = new_consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": names.group,
                "client.id": supervisor_id,
                "session.timeout.ms": session_timeout_ms,
                "heartbeat.interval.ms": max(500, session_timeout_ms // 6),
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 50,
                "log_level": 0,
                **(overrides or {}),
            }
        )
        self.consumer.subscribe([names.slots], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke)

    @property
    def owned(self) -> set[int]:
        """The slots this supervisor owns."""
        return self.table.owned

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.table.assigned({tp.partition for tp in partitions}, self.clock())
        self.joined = True
        log.info("[supervisor %s] owns slots %s", self.supervisor_id, sorted(self.owned))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """A rebalance (or, via ``on_lost``, an expired session, e.g. after a broker pause).

        Keep running what runs but start nothing until the new assignment. A slot that goes
        elsewhere is stopped then, and its new owner waits for that (:mod:`service.control.claims`),
        so no worker ever runs twice.
        """
        self.table.revoked()
        log.info("[supervisor %s] slots revoked: rejoining (workers keep running)", self.supervisor_id)

    def startable(self) -> set[int]:
        """Owned slots whose workers may start now (settled after a rebalance)."""
        return self.table.startable(self.clock())

    def poll(self) -> None:
        """Serve heartbeats and rebalance callbacks (nothing is ever fetched)."""
        self.consumer.consume(1, 0)
