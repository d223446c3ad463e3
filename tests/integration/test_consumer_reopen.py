"""A consumer that lost its group coordinator for good is replaced (streams.kafka.commit_watch), and so is a stats board's that stopped fetching.

Found on Apache Kafka: after a 10 s SIGSTOP of the broker, about one run in ten left the
acker's assign-only consumer failing every commit with _WAIT_COORD and fetching nothing,
for good. The executors now replace a consumer whose commits keep failing (when, and at
which positions: tests/unit/kafka/test_commit_watch.py); this test shows on a real broker
that the replacement goes on from the positions given and commits."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic

from streams.kafka.clients import new_admin, new_consumer, new_producer, reopen_consumer
from streams.kafka.fetch_gaps import FetchGaps
from streams.monitoring.board import StatsBoard
from streams.wire.naming import ledger_topic, metrics_topic
from tests.integration.conftest import TestBroker

pytestmark = pytest.mark.broker


def test_a_reopened_consumer_goes_on_from_the_given_positions_and_commits(broker: TestBroker) -> None:
    topic, group = f"t.reopen.{uuid.uuid4().hex[:8]}", f"t.reopen.g.{uuid.uuid4().hex[:8]}"
    admin = new_admin({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result()
    p = new_producer({"bootstrap.servers": broker.bootstrap})
    for i in range(100):
        p.produce(topic, str(i).encode(), partition=0)
    assert p.flush(30) == 0
    cfg = {"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False, "log_level": 0}
    old = new_consumer(cfg)
    old.assign([TopicPartition(topic, 0, 0)])
    seen: list[int] = []
    deadline = time.monotonic() + 60
    while len(seen) < 40 and time.monotonic() < deadline:
        seen += [int(m.value()) for m in old.consume(40 - len(seen), 0.5) if not m.error()]
    assert seen == list(range(40))
    # The executor processed 0..29 only: the new consumer starts at 30, the old one's prefetch is dropped.
    gaps = FetchGaps("t-reopen", single=True)
    new = reopen_consumer(old, cfg, [TopicPartition(topic, 0, 30)], "t-reopen", gaps)
    assert gaps.next_offset(topic, 0) == 30  # the executor's gap check expects the new start
    try:
        rest: list[int] = []
        deadline = time.monotonic() + 60
        while len(rest) < 70 and time.monotonic() < deadline:
            rest += [int(m.value()) for m in gaps.consume(new, 100, 0.5) if not m.error()]
        assert rest == list(range(30, 100))
        new.commit(offsets=[TopicPartition(topic, 0, 100)], asynchronous=False)
        assert new.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 100
    finally:
        new.close()


def test_a_stats_board_that_cannot_read_to_the_end_reopens_where_it_was(broker: TestBroker, monkeypatch: pytest.MonkeyPatch) -> None:
    """squall run's summary showed the counters from before a 10 s broker pause once: its
    board's consumer had stopped fetching. The board now replaces a consumer that cannot read
    to the end, at the offsets it had reached, so the summary counts what came after."""
    topology = f"t-board-{uuid.uuid4().hex[:8]}"
    admin = new_admin({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(metrics_topic(topology), 1, 1), NewTopic(ledger_topic(topology), 1, 1)]).values():
        f.result()
    p = new_producer({"bootstrap.servers": broker.bootstrap})

    def publish(instance: str, acked: int) -> None:
        snap = {"instance": instance, "kind": "bolt", "component": "count", "counters": {"acked": acked}, "gauges": {}, "hists": {}}
        p.produce(metrics_topic(topology), json.dumps(snap).encode(), partition=0)
        assert p.flush(30) == 0

    publish("count-1", 5)
    board = StatsBoard(broker.bootstrap, topology)
    try:
        assert board.read_to_now(30)
        assert board.total("bolt", "acked") == 5
        publish("count-1", 7)
        publish("count-2", 3)
        real = board.read_to_now
        calls: list[float] = []

        def wedged_once(timeout_s: float = 10.0) -> bool:
            calls.append(timeout_s)
            return False if len(calls) == 1 else real(timeout_s)

        monkeypatch.setattr(board, "read_to_now", wedged_once)
        old = board.consumer
        assert board.read_to_now_or_reopen(30)
        assert board.consumer is not old and len(calls) == 2
        assert board.total("bolt", "acked") == 10  # the latest snapshot of each instance: 7 + 3
    finally:
        board.close()
