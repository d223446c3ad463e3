"""Where the KafkaSpouts of a topology have committed: what a stateful bolt may forget.

A stateful bolt task keeps the ids of the tuples it applied (:mod:`streams.state.keyvalue`)
until their source records can never be replayed: a KafkaSpout replays only records at or
after its group's committed offset. :class:`SpoutPositions` reads those offsets, keyed as tuple
ids key their source (:func:`streams.wire.ids.source_key`).
"""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from streams.kafka.clients import new_consumer
from streams.kafka.spout import KafkaSpout
from streams.model.spec import Topology
from streams.wire.ids import source_key
from streams.wire.naming import component_group

log = logging.getLogger("squall.positions")


class SpoutPositions:
    """Reads the committed offsets of every KafkaSpout of ``topology``: ``{source key: offset}``.

    Args:
      bootstrap: ``bootstrap.servers``; overrides: consumer settings (security included);
      component: who asks (for log lines).
    A read that fails returns what it could (nothing is forgotten for the rest: safe).
    """

    def __init__(self, bootstrap: str, topology: Topology, component: str, overrides: dict[str, Any] | None = None) -> None:
        self.bootstrap = bootstrap
        self.topology = topology
        self.component = component
        self.overrides = dict(overrides or {})
        self._consumers: dict[str, Consumer] = {}

    def _consumer(self, spout: str) -> Consumer:
        c = self._consumers.get(spout)
        if c is None:
            group = component_group(self.topology.name, spout)
            c = self._consumers[spout] = new_consumer(
                {"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False, "log_level": 0, **self.overrides}
            )
        return c

    def __call__(self) -> dict[int, int]:
        """``{source key: committed offset}`` of every KafkaSpout source partition with a commit."""
        out: dict[int, int] = {}
        for cdef in self.topology.spouts:
            spout = cdef.obj
            if not isinstance(spout, KafkaSpout):
                continue
            try:
                c = self._consumer(cdef.id)
                available = list(c.list_topics(timeout=10).topics) if spout.pattern is not None else None
                topics = spout.source_topics(self.topology.name, cdef.id, available)
                meta = c.list_topics(timeout=10).topics
                tps = [TopicPartition(t, p) for t in topics if t in meta for p in meta[t].partitions]
                for tp in c.committed(tps, timeout=10):
                    if tp.error is None and tp.offset >= 0:
                        out[source_key(tp.topic, tp.partition)] = tp.offset
            except KafkaException as exc:
                log.warning("[%s] cannot read the committed offsets of spout %s (nothing forgotten this time): %s", self.component, cdef.id, exc)
        return out

    def close(self) -> None:
        """Close the consumers."""
        for c in self._consumers.values():
            c.close()
        self._consumers = {}
