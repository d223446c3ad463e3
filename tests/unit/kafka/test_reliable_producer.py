"""Every producer of tuples, acker ops and outputs is idempotent: a retried batch is never written twice.

Why it matters (Storm's acker: XOR of edge ids): an op applied twice cancels itself. The
worst case is a spout's ``init`` record written twice, which would complete a tree before any
bolt saw its tuple; the acker also ignores such an init (defence in depth, below).
"""

from __future__ import annotations

from typing import Any

import pytest

from acker.ledger import SKIP, Ledger, Reason
from streams.config import TopologyConfig
from streams.kafka.clients import RELIABLE_PRODUCER, producer_config
from streams.spark import clients as spark_clients


def test_executor_producers_are_idempotent_with_acks_all() -> None:
    cfg = producer_config("127.0.0.1:9092", TopologyConfig())
    assert cfg["enable.idempotence"] is True
    assert cfg["acks"] == "all"
    assert RELIABLE_PRODUCER == {"acks": "all", "enable.idempotence": True}


def test_a_users_producer_settings_still_win() -> None:
    cfg = producer_config("127.0.0.1:9092", TopologyConfig(), {"linger.ms": 50})
    assert cfg["linger.ms"] == 50 and cfg["enable.idempotence"] is True


def test_the_spark_bolts_producer_is_idempotent_too(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[dict[str, Any]] = []

    def new_producer(cfg: dict[str, Any]) -> object:
        built.append(cfg)
        return object()

    monkeypatch.setattr(spark_clients, "new_producer", new_producer)
    monkeypatch.setattr(spark_clients, "_producers", {})
    spark_clients.producer({"bootstrap.servers": "127.0.0.1:1"}, "spark-sink")
    assert built and built[0]["enable.idempotence"] is True and built[0]["acks"] == "all"


def test_an_init_written_twice_is_ignored_and_counted() -> None:
    root, spout_edge, words = 0x5EED, 0x9E3779B97F4A7C15, [0x1234_5678_9ABC_DEF1, 0x0FED_CBA9_8765_4321, 0x7777_0000_3333_1111]
    ledger = Ledger(timeout_s=30.0, clock=lambda: 0.0)
    assert ledger.init(root, spout_edge, spout_task=0) is None  # the tree waits for its line's bolt
    assert ledger.init(root, spout_edge, spout_task=0) is SKIP  # the same init record again: applied, it would complete the tree
    assert ledger.duplicate_inits == 1
    split_ack = spout_edge
    for w in words:
        split_ack ^= w
    assert ledger.ack(root, split_ack) is None  # the bolt's ack: its words are still tracked
    last = None
    for w in words:
        last = ledger.ack(root, w)
    assert last is not None and last.reason is Reason.COMPLETE
