"""When an executor sends what its producer holds at once (:mod:`streams.kafka.send_now`), no broker.

A spout caught up with its input, and a bolt whose input is drained after it released a flush's
acker ops. A spout held at its pending bound is not caught up: its downstream sets the pace, and
a forced send there would only make batches smaller.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from examples.wordcount import topology
from streams.config import resolve
from streams.model.tuple import Tuple
from streams.runtime import bolt as bolt_module
from streams.runtime.bolt import BoltExecutor
from streams.runtime.executor import ExecutorEnv
from streams.runtime.spout import SpoutExecutor

DEAD = {"producer": {"message.timeout.ms": 300, "log_level": 0}, "consumer": {"log_level": 0}}


def env(component: str) -> ExecutorEnv:
    return ExecutorEnv(topology=topology(), component=component, conf=resolve({"squall.topic.purge.interval.secs": 0}), bootstrap="127.0.0.1:1", kafka=DEAD)


def test_a_spout_is_caught_up_when_its_feed_brought_nothing_and_holds_nothing_back(monkeypatch: pytest.MonkeyPatch) -> None:
    ex = SpoutExecutor(env("lines"))
    try:
        assert ex.feed is not None
        assert ex._caught_up(fed=0, emitted=0)
        assert ex._caught_up(fed=0, emitted=7)  # emitted what it had: nothing new came
        assert not ex._caught_up(fed=3, emitted=3)  # input still coming
        monkeypatch.setattr(ex.feed, "buffered", lambda: 5000)  # held at its pending bound with records fetched
        assert not ex._caught_up(fed=0, emitted=0)
        ex.feed = None  # a spout without a feed (transactional, a user's own): caught up once it emits nothing
        assert ex._caught_up(fed=0, emitted=0)
        assert not ex._caught_up(fed=0, emitted=1)
    finally:
        ex.results.close()


def test_a_drained_bolt_sends_the_acker_ops_it_released_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """No broker: the output's delivery fails after 0.3 s, the drained flush waits for it, releases the
    flush (its ack becomes a fail op), then sends: the op was produced before the send, not left to linger."""
    ex = BoltExecutor(env("split"))
    events: list[str] = []
    tracked = ex.produce

    def produce(topic: str, value: bytes | None, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
        events.append(f"produce {topic}")
        tracked(topic, value, key, partition, headers)

    sends: list[int] = []

    def send_now(producer: Any) -> int:
        assert producer is ex.producer
        events.append("send_now")
        sends.append(len(producer))
        return 0

    ex.produce = ex.transfer.send = produce
    monkeypatch.setattr(bolt_module, "send_now", send_now)
    try:
        task = ex.by_partition[0] = ex._new_task(0)
        root = random.getrandbits(64)
        t = Tuple(["to be"], "default", "lines", 0, {root: random.getrandbits(64)}, ex.topology.field_index("lines", "default"), ex.topic, 0, 9)
        ex._execute(task, t)
        task.next_offset = 10
        ex._flush()  # not drained: sealed, nothing sent at once
        assert "send_now" not in events
        assert ex.acks is not None
        ex._flush(drained=True)  # waits for every flush, releases them, then sends
        acker_ops = [i for i, e in enumerate(events) if e == f"produce {ex.acks.topic}"]
        assert acker_ops and events[-1] == "send_now" and max(acker_ops) < len(events) - 1
        assert sends and sends[-1] >= 1  # it held the op when it sent
    finally:
        ex.producer.purge()
        ex.producer.flush(0)
