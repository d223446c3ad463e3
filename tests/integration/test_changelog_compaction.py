"""The changelog state store after Apache Kafka's log cleaner ran (issue 26; the embedded broker never compacts,
so this runs on Apache Kafka only)."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from service.brokers.admin import ensure_topics
from streams.kafka.changelog_store import ChangelogKvStore, changelog_topic
from streams.state.backend import KvCommit
from tests.integration.conftest import TestBroker

pytestmark = pytest.mark.broker


def test_after_compaction_the_same_checkpoint_comes_back(broker: TestBroker) -> None:
    """Apache Kafka's log cleaner removes overwritten values, forgotten ids and aborted checkpoints;
    what is left restores the same state (the embedded broker never compacts)."""
    name = f"t{uuid.uuid4().hex[:8]}.count"
    topic = changelog_topic(name)
    fast = {"cleanup.policy": "compact", "segment.ms": "200", "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100", "min.compaction.lag.ms": "0"}
    ensure_topics(broker.bootstrap, {topic: 1}, configs={topic: fast})
    store = ChangelogKvStore(broker.bootstrap, component="count")
    store.kv_load(name, 0)

    def records() -> int:
        """Records a read_committed reader sees in the partition now."""
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "t", "enable.partition.eof": True, "log_level": 0})
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        n = 0
        try:
            while True:
                m = c.poll(5.0)
                if m is None or (m.error() and m.error().code() == KafkaError._PARTITION_EOF):
                    return n
                if not m.error():
                    n += 1
        finally:
            c.close()

    # Checkpoints overwrite a and b, and forget all but the last two checkpoints' ids; segments
    # roll every 200 ms, and the cleaner (every second here) compacts the closed ones.
    written = i = 0
    deadline = time.monotonic() + 90
    while True:
        i += 1
        forget = i - 2 if i > 2 else 0
        store.kv_commit(name, 0, KvCommit(i, float(i), {'"a"': str(i), '"b"': str(-i)}, [], {3: (i, b"\x00" * 12)}, forget_upto=forget))
        written += 4 + (1 if forget else 0)
        time.sleep(0.05)
        if i >= 40 and (i % 10 == 0) and (records() < written / 3 or time.monotonic() > deadline):
            break
    store.close()
    after = records()
    assert after < written / 3, f"not compacted: {written} records written, {after} left"
    print(f"{i} checkpoints: {written} records written, {after} left after compaction")
    last = ChangelogKvStore(broker.bootstrap, component="count")
    try:
        snap = last.kv_load(name, 0)
        assert snap.values == {'"a"': str(i), '"b"': str(-i)} and snap.checkpoint == i
        assert [row[0] for row in snap.applied] == [i - 1, i]
    finally:
        last.close()
