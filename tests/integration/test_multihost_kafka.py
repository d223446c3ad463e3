"""Several hosts on one machine, on Apache Kafka (issue 29): a three-node cluster spread over three broker hosts.

Hosts b1-b3 each run one Kafka node (a combined broker and controller; every topic has
replication factor 3 and ``min.insync.replicas`` 2); h1-h3 each run ``squall serve``; the
client host c runs PostgreSQL (the exactly-once state), submits, feeds and checks. The
at-least-once and the exactly-once word count run together on a live feed of 500 lines/s each.

Scenario: the host of the leader of the at-least-once topology's source partition is cut off
from every other host for 22 s, then healed. The other two nodes elect new leaders; the
workers follow them. Checked: no word missing at least once, the exactly-once counts exact,
the overcount reported and at most one message timeout's worth of input, no dead letter, no
record of the word count's tuples, acker ops or results written twice (read from the nodes' log
files: a retried batch without idempotence), no task with two live claimants, and no worker that
resumed beside its replacement.

Needs root and nftables: without them the test fails saying why (it is never skipped).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.netns_cluster import SUPERVISORS, NetCluster, finish_and_check, never_beside, running_lan, submit_both

pytestmark = pytest.mark.broker

BROKERS = ["b1", "b2", "b3"]
HOSTS = [*BROKERS, *SUPERVISORS, "c"]
CUT_S = 22
"""How long the leader's host is cut off (seconds): past the election of new leaders (11-14 s) and the clients' 10 s socket timeout."""


@pytest.fixture(scope="module")
def kafka_lan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetCluster]:
    with running_lan(HOSTS, BROKERS, "c", tmp_path_factory.mktemp("kafka-lan"), kafka=True) as cluster:
        yield cluster


def test_the_host_of_a_partition_leader_cut_off_for_22s(kafka_lan: NetCluster, corpus: Path, tmp_path: Path) -> None:
    cluster = kafka_lan
    run = submit_both(cluster, corpus, tmp_path, 15_000)
    source = f"squall.{run.alo}.lines"
    feeders = [cluster.feed(run.alo, run.src, 30), cluster.feed(run.eo, run.src, 30)]
    time.sleep(5)
    leader = cluster.client("leader", cluster.bootstrap, source, "0")
    victim = cluster.broker_host(leader)
    marks = {"cut": time.time()}
    cluster.lan.isolate(victim)
    survivors = ",".join(f"{cluster.lan.ip[b]}:9092" for b in BROKERS if b != victim)
    deadline = time.monotonic() + 60
    while (moved := cluster.client("leader", survivors, source, "0")) in (leader, -1):
        assert time.monotonic() < deadline, f"{source}[0] has no new leader 60 s after its leader's host {victim} was cut off"
        time.sleep(1)
    marks["new leader"] = time.time()
    time.sleep(max(0.0, marks["cut"] + CUT_S - time.time()))
    marks["heal"] = time.time()
    cluster.lan.heal(victim)
    got = finish_and_check(cluster, run, feeders, marks, SUPERVISORS)
    print(f"{source}[0]: leader node {leader} on {victim}, then node {moved}, {marks['new leader'] - marks['cut']:.1f} s after the cut")
    assert not any(never_beside(got["logs"], sid) for sid in SUPERVISORS)
