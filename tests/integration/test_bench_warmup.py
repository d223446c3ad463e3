"""The bench's warm-up of a fresh Apache Kafka (bench/warmup.py) runs its traffic and leaves nothing behind."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient

from bench.warmup import warm_broker

pytestmark = pytest.mark.broker


@pytest.mark.kafka_only  # the benches warm only a fresh Apache Kafka (the embedded broker has no JIT, nor DeleteRecords)
def test_the_warmup_writes_reads_purges_and_deletes_its_topics(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    groups_before = {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    started = time.monotonic()
    warm_broker(bootstrap, 4.0)  # raises RuntimeError naming the thread's error if any part failed (DeleteRecords too)
    took = time.monotonic() - started
    assert 4.0 <= took < 60.0, took
    deadline = time.monotonic() + 30
    while True:
        left = [t for t in admin.list_topics(timeout=30).topics if t.startswith("bench.warmup.")]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert left == [], left  # the trickle, the large batches and the compacted topic
    groups = {g.group_id for g in admin.list_consumer_groups().result(30).valid} - groups_before
    assert any(g.startswith("bench-warmup-") for g in groups), groups  # the committing consumer group ran


def test_no_seconds_is_no_traffic() -> None:
    warm_broker("127.0.0.1:1", 0.0)  # returns at once: no broker is asked
