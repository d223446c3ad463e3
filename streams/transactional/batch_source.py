"""Where a transactional spout's batches come from, and where its coordinator's state is kept.

:class:`BatchSource` is everything the spout needs from outside: the coordinator's state
(load, save), the source partitions' ends and starts, the records of a batch's ranges, and
the group offsets committed for lag. :class:`KafkaBatchSource` is the runtime's (the
coordinator topic, a :class:`~streams.transactional.range_reader.RangeReader`, the spout's
consumer group); the test kit gives an in-memory one (:mod:`streams.testing`).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaException, TopicPartition

from streams.config import TopologyConfig
from streams.exceptions import FatalError
from streams.kafka.clients import consumer_config, new_consumer
from streams.transactional.coordinator import CoordinatorState, Range
from streams.transactional.coordinator_store import CoordinatorStore
from streams.transactional.range_reader import RangeReader
from streams.wire.naming import TP, component_group, coordinator_topic

log = logging.getLogger("squall.transactional")


class BatchSource(Protocol):
    """A transactional spout's outside world (see the module docstring)."""

    partitions: list[TP]
    """The source partitions, ``(topic, partition)``."""

    def load(self) -> CoordinatorState:
        """The coordinator's last saved state (a fresh one at the first start)."""

    def save(self, snapshot: dict[str, Any]) -> None:
        """Keep the coordinator's state durably before what it decided is emitted."""

    def highs(self) -> dict[TP, int]:
        """Each partition's end offset, where known."""

    def starts(self) -> dict[TP, int]:
        """Where a partition never batched before starts."""

    def read(self, ranges: dict[TP, Range]) -> dict[TP, list[Any]]:
        """The records of each ``[first, end)`` range, in offset order (``confluent_kafka.Message``-shaped)."""

    def commit_group(self, offsets: dict[TP, int]) -> None:
        """Commit a committed batch's ends to the spout's group (for lag only; failures are logged)."""

    def close(self) -> None:
        """Release what it holds."""


class KafkaBatchSource:
    """The runtime's :class:`BatchSource`: the coordinator topic, a range reader, the spout's group.

    Raises FatalError naming ``component`` if the source topics do not appear within 30 s.
    """

    def __init__(self, topology: str, component: str, topics: list[str], bootstrap: str, kafka: dict[str, Any], config: TopologyConfig) -> None:
        self.component = component
        self.store = CoordinatorStore(bootstrap, coordinator_topic(topology), component, kafka)
        group = component_group(topology, component)
        base = consumer_config(bootstrap, group, config, kafka.get("consumer"))
        self.group: Consumer = new_consumer(base)
        self.partitions = self._partitions(topics)
        # a partition's read-ahead is bounded at two full batches (squall.batch.records), at least 100,000 records
        self.reader = RangeReader({**base, "group.id": group + ".__ranges"}, self.partitions, component, max_ahead=max(100_000, 2 * config.batch_records))

    def _partitions(self, topics: list[str]) -> list[TP]:
        deadline = time.monotonic() + 30
        while True:
            md = self.group.list_topics(timeout=10)
            out = [(t, p) for t in topics if t in md.topics and md.topics[t].error is None for p in sorted(md.topics[t].partitions)]
            if len(out) and all(t in md.topics for t in topics):
                return out
            if time.monotonic() > deadline:
                raise FatalError(f"[{self.component}] source topics {topics} not available")
            time.sleep(0.5)

    def load(self) -> CoordinatorState:
        """The state last written to the coordinator topic."""
        return self.store.load()

    def save(self, snapshot: dict[str, Any]) -> None:
        """Write the state to the coordinator topic (waits for the broker)."""
        self.store.save(snapshot)

    def highs(self) -> dict[TP, int]:
        """High watermarks from Fetch responses."""
        return self.reader.highs()

    def starts(self) -> dict[TP, int]:
        """Low watermarks."""
        return self.reader.starts()

    def read(self, ranges: dict[TP, Range]) -> dict[TP, list[Any]]:
        """Read the ranges (raises FatalError naming the partition if one cannot be read in 60 s)."""
        return dict(self.reader.read(ranges))

    def commit_group(self, offsets: dict[TP, int]) -> None:
        """Synchronous commit; a failure is logged (lag only: the coordinator topic is the truth)."""
        try:
            self.group.commit(offsets=[TopicPartition(t, p, end) for (t, p), end in offsets.items()], asynchronous=False)
        except KafkaException as exc:
            log.warning("[%s] group offsets not committed (lag only): %s", self.component, exc)

    def close(self) -> None:
        """Close the reader and the group consumer."""
        self.reader.close()
        self.group.close()
