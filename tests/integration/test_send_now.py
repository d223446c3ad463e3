"""An executor that caught up with its input sends what it holds at once, not after ``linger.ms`` (:mod:`streams.kafka.send_now`).

Both tests set a linger far longer than their deadline: a record that waited for it could not
arrive in time, so arriving in time says it was sent at once, however slow the machine.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from service.brokers.admin import ensure_topics
from service.config import ServiceSettings
from service.run.runner import Job
from streams.kafka.send_now import send_now

pytestmark = [pytest.mark.broker, pytest.mark.embedded]

LATENCY_TOPOLOGY = Path(__file__).resolve().parents[2] / "bench" / "topologies" / "latency.py"
LINGER_MS = 120_000
DEADLINE_S = 60.0
TOPOLOGY_LINGER_MS = 15_000
"""The topology's: its executors' stats snapshots linger too, and the job is ready once each sent one."""
TOPOLOGY_DEADLINE_S = 10.0


def test_send_now_sends_what_lingers(bootstrap: str) -> None:
    topic = f"send-now-{uuid.uuid4().hex[:8]}"
    ensure_topics(bootstrap, {topic: 1})
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": LINGER_MS, "acks": "all", "enable.idempotence": True, "log_level": 0})
    try:
        assert send_now(p) == 0  # holds nothing: no flush
        p.produce(topic, b"connect")  # an executor's producer is connected and knows its partitions' leaders
        assert p.flush(DEADLINE_S) == 0
        delivered: list[float] = []
        p.produce(topic, b"now", on_delivery=lambda err, msg: delivered.append(time.monotonic()) if err is None else None)
        assert len(p) == 1
        send_now(p)
        deadline = time.monotonic() + DEADLINE_S
        while not delivered and time.monotonic() < deadline:
            p.poll(0.05)
        assert delivered, f"not delivered within {DEADLINE_S:g} s: it waited for linger.ms ({LINGER_MS} ms)"
    finally:
        p.purge()
        p.flush(0)


def test_a_tree_through_caught_up_executors_is_acked_before_any_linger_ends(bootstrap: str, tmp_path: Path) -> None:
    """The latency topology (spout, three pass-through bolts, the acker) with ``squall.kafka.linger.ms``
    of 15 s: the spout's tuples and inits and the bolts' acker ops leave at once, so every line's
    tree is acked within 10 s; waiting for the linger, not one could be."""
    settings = ServiceSettings(bootstrap_servers=bootstrap, data_dir=tmp_path, log_level="WARNING")
    job = Job(LATENCY_TOPOLOGY, Path("/dev/null"), None, settings, topology_overrides={"squall.kafka.linger.ms": TOPOLOGY_LINGER_MS})
    try:
        job.start(produce_input=False)
        job.wait_ready()
        assert job.board is not None
        topic = f"squall.{job.name}.lines"
        p = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
        lines = 20
        for i in range(lines):
            p.produce(topic, f"line {i}".encode(), partition=i % job.topology.components["lines"].input_partitions)
        p.flush(30)
        started = time.monotonic()
        while job.board.total("spout", "acked") < lines and time.monotonic() < started + TOPOLOGY_DEADLINE_S:
            job.board.poll(0.2)
        # A tree is acked once every bolt acked its tuple: each hop's tuples and acker ops arrived.
        # (The bolts' stats snapshots do linger: the board's other counters lag behind here.)
        acked = job.board.total("spout", "acked")
        print(f"{acked:.0f} trees acked in {time.monotonic() - started:.1f} s, linger.ms {TOPOLOGY_LINGER_MS}")
        assert acked == lines, f"{acked} of {lines} trees acked within {TOPOLOGY_DEADLINE_S:g} s"
        assert job.board.quantile("spout", "complete_latency", 1.0) < TOPOLOGY_DEADLINE_S
    finally:
        job.close()
