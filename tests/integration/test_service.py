"""``squall serve`` and Storm's verbs, as a user runs them: supervisors and the CLI are real
processes, a separate producer process feeds the topology, and supervisors are killed for
real (SIGKILL) or stopped (SIGTERM). Each test has a fresh control namespace and names.

They run on Apache Kafka, the broker a service runs on; one (a crashed worker, restarted)
runs on the embedded broker too, which ``squall serve --embedded-broker`` uses for a try-out
(``test_brokers_cli.py`` serves on it as well). Every test ran on both until CI neared 45 min.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import assert_at_least, assert_exact, corpus_slice, direct_count
from tests.integration.service_harness import STATEFUL, WORDCOUNT, Cluster, worker_pids

pytestmark = pytest.mark.broker

WORKERS = 4  # examples/wordcount.py: topology.workers


def name() -> str:
    return f"wc{uuid.uuid4().hex[:6]}"


def running_wordcount(cluster: Cluster, supervisors: list[str], *conf: str) -> str:
    """Start ``supervisors``, submit the word count under a fresh name, wait until ready."""
    for sid in supervisors:
        cluster.serve(sid)
    wc = name()
    out = cluster.squall("submit", str(WORDCOUNT), "--name", wc, *conf)
    assert out.stdout.startswith(f"submitted {wc}: 4 workers")
    cluster.wait_ready(supervisors, WORKERS)
    return wc


def test_two_supervisors_count_a_live_stream_exactly(cluster: Cluster, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 15_000)
    wc = running_wordcount(cluster, ["s1", "s2"])
    assert cluster.metric("s1", "squall_supervisor_workers") >= 1 and cluster.metric("s2", "squall_supervisor_workers") >= 1  # split
    feeder = cluster.feed(f"squall.{wc}.lines", src, seconds=10)
    assert feeder.wait(120) == 0
    cluster.wait_committed(wc, 15_000)
    assert_exact(cluster.counts(wc), direct_count(src), lambda: cluster.spout_totals(wc))
    time.sleep(2)  # one more stats interval
    acked = 0.0
    for sid in ("s1", "s2"):  # each supervisor's /metrics covers the workers it runs
        _, text = cluster.http(sid, "/metrics")
        acked += sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("squall_acked_total{") and 'kind="spout"' in line)
    assert acked == 15_000
    listed = cluster.squall("list").stdout
    assert wc in listed and "ACTIVE" in listed
    assert cluster.status(wc)["outputs"] == [{"topic": f"squall.{wc}.counts", "component": "count", "kind": "set_output"}]
    assert f"output topic        squall.{wc}.counts (written by count, set_output)" in cluster.squall("status", wc).stdout


def test_a_supervisor_killed_mid_stream_hands_its_workers_over(cluster: Cluster, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 20_000)
    wc = running_wordcount(cluster, ["s1", "s2"])
    victim = "s1" if cluster.metric("s1", "squall_supervisor_workers") > 0 else "s2"
    survivor = "s2" if victim == "s1" else "s1"
    feeder = cluster.feed(f"squall.{wc}.lines", src, seconds=12)
    time.sleep(4)
    cluster.kill9(victim)
    failover_s = cluster.wait_ready([survivor], WORKERS)
    print(f"failover: the survivor ran all {WORKERS} workers and was ready {failover_s:.1f} s after the kill -9")
    assert failover_s < 60
    assert feeder.wait(120) == 0
    cluster.wait_committed(wc, 20_000)
    assert_at_least(dict(cluster.counts(wc)), direct_count(src))


def test_rebalance_executors_mid_stream_without_replays(cluster: Cluster, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 20_000)
    wc = running_wordcount(cluster, ["s1"])
    feeder = cluster.feed(f"squall.{wc}.lines", src, seconds=14)
    time.sleep(4)
    assert cluster.squall("rebalance", wc, "-e", "count=1").stdout.startswith(f"rebalanced {wc}")
    assert cluster.status(wc)["components"]["count"]["executors"] == 1
    time.sleep(3)
    cluster.squall("rebalance", wc, "-e", "count=4")
    st = cluster.status(wc)
    assert st["components"]["count"]["executors"] == 4 and st["status"] == "ACTIVE"
    assert feeder.wait(120) == 0
    cluster.wait_committed(wc, 20_000, timeout_s=90)
    assert_exact(cluster.counts(wc), direct_count(src), lambda: cluster.spout_totals(wc))
    st = cluster.status(wc)
    assert st["trees_failed"] == 0 and st["components"]["lines"]["replayed"] == 0


def test_deactivate_pauses_the_spouts_and_activate_resumes(cluster: Cluster, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 20_000)
    wc = running_wordcount(cluster, ["s1"], "-c", "topology.message.timeout.secs=6")
    feeder = cluster.feed(f"squall.{wc}.lines", src, seconds=20)  # still feeding when the pause is checked, however slow the verbs
    time.sleep(4)
    assert cluster.squall("deactivate", wc).stdout.strip() == f"deactivated {wc}"
    time.sleep(3)  # trees already in flight finish
    paused_at = cluster.committed(wc)
    assert 0 < sum(paused_at) < 20_000
    time.sleep(8)  # longer than the message timeout
    assert cluster.committed(wc) == paused_at  # no offset moved while paused
    st = cluster.status(wc)
    assert st["status"] == "INACTIVE" and st["pending"] == 0
    assert st["trees_failed"] == 0  # no tree timed out because of the pause
    # A rebalance keeps it inactive, as Storm does (it used to come back ACTIVE: issue 25).
    assert cluster.squall("rebalance", wc, "-e", "count=2").stdout.startswith(f"rebalanced {wc}")
    time.sleep(4)
    assert cluster.status(wc)["status"] == "INACTIVE" and cluster.committed(wc) == paused_at
    cluster.squall("activate", wc)
    assert feeder.wait(120) == 0
    cluster.wait_committed(wc, 20_000)
    assert_exact(cluster.counts(wc), direct_count(src), lambda: cluster.spout_totals(wc))


def test_kill_waits_for_trees_in_flight_then_removes_the_workers(cluster: Cluster, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 20_000)
    wc = running_wordcount(cluster, ["s1"])
    assert len(worker_pids(wc)) == WORKERS
    feeder = cluster.feed(f"squall.{wc}.lines", src, seconds=10)
    time.sleep(5)
    out = cluster.squall("kill", wc, "-w", "5")
    assert out.stdout.strip() == f"killed {wc} (waited 5 s)"
    assert worker_pids(wc) == []
    assert wc not in cluster.squall("list").stdout
    board = cluster.board(wc)
    spouts = [s for s in board.latest.values() if s["kind"] == "spout"]
    board.close()
    left = [(s["worker"], s.get("executor"), s["final"], s["gauges"]["pending"], s["counters"]) for s in spouts]
    assert spouts and all(s["final"] and s["gauges"]["pending"] == 0 for s in spouts), left  # nothing left in flight
    assert sum(s["counters"].get("failed", 0) for s in spouts) == 0
    acked = sum(s["counters"].get("acked", 0) for s in spouts)
    assert acked == sum(cluster.committed(wc)) > 0  # every emitted tree was acked and committed
    feeder.wait(60)


def test_sigterm_drains_and_a_new_supervisor_replays_nothing(cluster: Cluster, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 20_000)
    wc = running_wordcount(cluster, ["s1"])
    feeder = cluster.feed(f"squall.{wc}.lines", src, seconds=14)
    time.sleep(6)
    started = time.monotonic()
    assert cluster.term("s1") == 0
    print(f"drain: squall serve exited 0 {time.monotonic() - started:.1f} s after SIGTERM")
    assert worker_pids(wc) == []
    cluster.serve("s2")
    assert feeder.wait(120) == 0
    cluster.wait_committed(wc, 20_000, timeout_s=90)
    assert_exact(cluster.counts(wc), direct_count(src), lambda: cluster.spout_totals(wc))
    board = cluster.board(wc)
    spouts = [s for s in board.latest.values() if s["kind"] == "spout"]
    board.close()
    emitted = sum(s["counters"].get("emitted", 0) for s in spouts)
    assert emitted == 20_000  # no record was emitted twice: the drain left nothing to replay
    assert sum(s["counters"].get("replayed", 0) for s in spouts) == 0


def test_user_errors_print_one_line_and_exit_2(cluster: Cluster, tmp_path: Path) -> None:
    cluster.serve("s1")
    wc = name()
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def topology(:\n    pass\n")
    raises = tmp_path / "raises.py"
    raises.write_text("from streams import TopologyBuilder\n\n\ndef topology():\n    raise ValueError('no spouts today')\n")
    cases = [
        (["submit", str(tmp_path / "missing.py")], f"error: [{tmp_path / 'missing.py'}] topology file not found"),
        (["submit", str(syntax)], f"error: [{syntax}:1] syntax error: invalid syntax"),
        (["submit", str(raises)], f"error: [{raises}:5] topology() raised ValueError: no spouts today"),
        (["submit", str(WORDCOUNT), "-c", "topology.wrokers=2"], "error: -c topology.wrokers: unknown config key"),
        (["submit", str(WORDCOUNT), "-c", "topology.workers=many"], "error: [wordcount] invalid config: topology.workers: Input should be a valid integer"),
        (["kill", "no-such-topology"], "error: [no-such-topology] no such topology (see: squall list)"),
        (["rebalance", "no-such-topology", "-e", "count=2"], "error: [no-such-topology] no such topology (see: squall list)"),
    ]
    for args, message in cases:
        got = cluster.squall(*args, check=False)
        assert got.returncode == 2, (args, got.stdout, got.stderr)
        assert got.stderr.startswith(message), (args, got.stderr)
        assert len(got.stderr.strip().splitlines()) == 1 and "Traceback" not in got.stderr, got.stderr
    cluster.squall("submit", str(WORDCOUNT), "--name", wc)
    got = cluster.squall("submit", str(WORDCOUNT), "--name", wc, check=False)
    assert got.returncode == 2 and got.stderr.strip() == f"error: [{wc}] a topology of that name is running; kill it first or give --name"
    got = cluster.squall("rebalance", wc, "-e", "count=9", check=False)
    assert got.returncode == 2 and got.stderr.strip() == "error: [count] rebalance -e count=9: executors must be 1..4 (its task count, fixed at submit)"
    unreachable = cluster.env(SQUALL_BOOTSTRAP_SERVERS="127.0.0.1:1")
    got = cluster.squall("list", check=False, env=unreachable)
    assert got.returncode == 2 and got.stderr.strip() == "error: [control] no Kafka broker answers at 127.0.0.1:1 (bootstrap.servers)"
    verbose = cluster.squall("--verbose", "kill", "no-such-topology", check=False)
    assert verbose.returncode == 2 and "Traceback" in verbose.stderr and verbose.stderr.strip().endswith("no such topology (see: squall list)")


@pytest.mark.embedded
def test_a_crashed_worker_is_restarted_and_reported(cluster: Cluster, corpus: Path, tmp_path: Path) -> None:
    wc = running_wordcount(cluster, ["s1"])
    before = set(worker_pids(wc))
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while cluster.metric("s1", "squall_worker_restarts_total") < 1:
        assert time.monotonic() < deadline, "the crash was not noticed"
        time.sleep(0.2)
    cluster.wait_ready(["s1"], WORKERS)
    after = set(worker_pids(wc))
    assert len(after) == WORKERS and victim not in after
    assert cluster.metric("s1", "squall_worker_restarts_total") == 1
    errors = cluster.status(wc)["errors"]
    assert len(errors) == 1 and errors[0]["exit_code"] == -9 and errors[0]["supervisor"] == "s1" and not errors[0]["gave_up"]


def test_two_supervisors_refuse_sqlite_state_that_could_not_follow_a_moved_task(cluster: Cluster) -> None:
    """Issue 25: with SQLite state (the default) and two supervisors, a stateful task that moved
    started on the other machine's empty file and counted from zero, silently. Now the workers
    that hold stateful tasks are refused, and status says why; kafka:// state starts."""
    for sid in ("s1", "s2"):
        cluster.serve(sid)
    deadline = time.monotonic() + 120
    while not all(cluster.metric(s, "squall_supervisor_slots") > 0 for s in ("s1", "s2")):  # both in the group
        assert time.monotonic() < deadline, cluster.log("s1")[-3000:]
        time.sleep(0.3)
    wc = name()
    cluster.squall("submit", str(STATEFUL), "--name", wc)
    refused: list[dict[str, Any]] = []
    while not refused:
        assert time.monotonic() < deadline + 60, cluster.log("s1")[-3000:]
        time.sleep(1.0)
        refused = [e for e in cluster.status(wc)["errors"] if e["event"] == "refused"]
    assert "[count] keeps its state in sqlite:///" in refused[0]["reason"] and "postgresql://" in refused[0]["reason"]
    assert "count" in refused[0]["components"]
    shown = cluster.squall("status", wc).stdout
    assert f"[{wc}] worker w{refused[0]['worker']} not started: [count] keeps its state in sqlite:///" in shown
    print(shown.splitlines()[-1])
    cluster.squall("kill", wc, "-w", "0")
    kv = name()
    cluster.squall("submit", str(STATEFUL), "--name", kv, "-c", "squall.state.url=kafka://")
    cluster.wait_ready(["s1", "s2"], 4)  # the kafka:// topology's four workers, none refused
    assert not [e for e in cluster.status(kv)["errors"] if e["event"] == "refused"]
