"""Broker faults never end a run: on a three-node Apache Kafka cluster (replication 3,
``min.insync.replicas`` 2), ``kill -9`` the node leading the spout's and the acker's partitions
mid-stream and start it again 20 s later. The at-least-once word count misses nothing, the
exactly-once word count is exact, and the pause in acked throughput is reported."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.runner import Job
from streams.wire.naming import acker_topic, component_topic
from tests.integration.conftest import EXAMPLES, TestBroker, assert_at_least, assert_exact, corpus_slice, direct_count

pytestmark = [pytest.mark.broker, pytest.mark.cluster]

DOWN_S = 20.0


@pytest.fixture(scope="module", autouse=True)
def _the_cluster_stops_after_this_module(broker: TestBroker) -> Iterator[None]:
    """The session's three-node cluster serves this module only: stopped after it, its three
    idle JVMs no longer take about 40% of a core from every later test (CI time)."""
    yield
    broker.stop()


def leader_to_kill(broker: TestBroker, name: str, spout: str, spout_partitions: int, ackers: int) -> int:
    """The node that leads the most of the spout's and the acker's partitions."""
    assert broker.kafka is not None
    leads: Counter[int] = Counter()
    for p in range(spout_partitions):
        leads[broker.kafka.leader_of(component_topic(name, spout), p)] += 1
    for p in range(ackers):
        leads[broker.kafka.leader_of(acker_topic(name), p)] += 1
    return leads.most_common(1)[0][0]


def run_with_failover(broker: TestBroker, example: Path, src: Path, out: Path, tmp_path: Path) -> tuple[Job, list[tuple[float, float]], int]:
    """Run ``example`` on ``src``; once a fifth is acked, kill -9 the leader, start it again
    ``DOWN_S`` later. Returns the job, ``(seconds, acked)`` samples and the node killed."""
    assert broker.kafka is not None
    settings = ServiceSettings(bootstrap_servers=broker.bootstrap, data_dir=tmp_path, log_level="INFO", restart_initial_secs=0.5)
    job = Job(example, src, out, settings)
    samples: list[tuple[float, float]] = []
    killed = -1
    try:
        job.start()
        assert job.board is not None
        spout = job.spout_id
        records = job.records
        deadline = time.monotonic() + 300
        t0 = time.monotonic()
        restarted = False
        down_at = 0.0
        while not job.done():
            assert time.monotonic() < deadline, f"not done in 300 s: {job.committed()}"
            assert job.cluster is not None
            job.cluster.check()
            job.board.poll(0.25)
            acked = job.board.total("spout", "acked") if not job.topology.transactional else job.board.total("spout", "records_committed")
            samples.append((time.monotonic() - t0, acked))
            if killed < 0 and acked >= records / 5:
                killed = leader_to_kill(broker, job.name, spout, job.topology.components[spout].input_partitions, job.conf.ackers)
                broker.kafka.kill(killed)
                down_at = time.monotonic()
            if killed >= 0 and not restarted and time.monotonic() - down_at >= DOWN_S:
                broker.kafka.restart(killed)
                restarted = True
        if killed >= 0 and not restarted:
            broker.kafka.restart(killed)
        job.finished = time.monotonic()  # as Job.wait ends: stop the workers, read their last stats, write the output
        assert job.cluster is not None
        job.cluster.stop()
        end = time.monotonic() + 5
        while time.monotonic() < end and job.board.poll(0.3):
            pass
        job.summary()
    finally:
        job.close()
    return job, samples, killed


def longest_stall(samples: list[tuple[float, float]]) -> float:
    """The longest stretch (seconds) in which the acked count did not move, after the first ack."""
    longest, since = 0.0, None
    last = -1.0
    for t, acked in samples:
        if acked > last:
            if since is not None:
                longest = max(longest, t - since)
            since, last = t, acked
    return longest


def test_at_least_once_word_count_misses_nothing_when_a_leader_dies(broker: TestBroker, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 40_000)
    out = tmp_path / "counts.json"
    _job, samples, killed = run_with_failover(broker, EXAMPLES / "wordcount.py", src, out, tmp_path / "run")
    assert killed > 0
    assert_at_least(json.loads(out.read_text()), direct_count(src))
    stall = longest_stall(samples)
    print(f"killed node {killed} for {DOWN_S:g} s: acked throughput paused {stall:.1f} s at most; {len(samples)} samples")
    assert stall < 60


def test_exactly_once_word_count_is_exact_when_a_leader_dies(broker: TestBroker, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 40_000)
    out = tmp_path / "counts.json"
    _job, samples, killed = run_with_failover(broker, EXAMPLES / "wordcount_exactly_once.py", src, out, tmp_path / "run")
    assert killed > 0
    assert_exact(json.loads(out.read_text()), direct_count(src))
    print(f"killed node {killed} for {DOWN_S:g} s: committed records paused {longest_stall(samples):.1f} s at most")
