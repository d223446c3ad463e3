"""Reliability switched off three ways, at-most-once, dead letters, poison records and a
multi-anchored join -- each on a real broker with fresh topics."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from service.brokers.admin import read_topic
from service.config import ServiceSettings
from service.run.runner import Job
from service.run.summary import Summary
from streams.wire.naming import acker_topic
from tests.integration.conftest import TOPOLOGIES, corpus_slice, dead_letters, direct_count, run_job

pytestmark = pytest.mark.broker


def run_mode(
    mode: str, settings: ServiceSettings, src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **overrides: Any
) -> tuple[Job, Summary, dict[str, int]]:
    monkeypatch.setenv("SQUALL_TEST_MODE", mode)
    out = tmp_path / "out.json"
    overrides = {**NO_PURGE, **overrides}  # these tests read what reached __acker after the run
    job, summary = run_job(TOPOLOGIES / "modes.py", src, out, settings, topology_overrides=overrides)
    return job, summary, json.loads(out.read_text())


NO_PURGE = {"squall.topic.purge.interval.secs": 0}
"""Keep what the acker consumed (it is read back after the run)."""


def acker_ops(job: Job) -> list[Any]:
    return [op for rec in read_topic(job.bootstrap, acker_topic(job.name)) for op in rec]


def flaky(src: Path) -> int:
    return sum(1 for line in src.read_bytes().splitlines() if line.strip() and zlib.crc32(line.decode("utf-8", "replace").encode()) % 10 == 0)


@pytest.fixture
def src(corpus: Path, tmp_path: Path) -> Path:
    return corpus_slice(corpus, tmp_path / "slice.txt", 1500)


def test_zero_ackers_acks_at_emit_and_sends_no_tracking(settings: ServiceSettings, src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job, summary, counts = run_mode("zero_ackers", settings, src, tmp_path, monkeypatch)
    assert summary.trees_acked == 1500  # the spout's ack ran right after each emit
    assert summary.trees_failed == 0 and summary.replayed == 0  # the failing split changed nothing
    assert acker_ops(job) == []
    assert sum(counts.values()) < sum(direct_count(src).values())  # the failed lines' words are lost


def test_no_message_id_is_untracked(settings: ServiceSettings, src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job, summary, counts = run_mode("no_msg_id", settings, src, tmp_path, monkeypatch)
    assert acker_ops(job) == []  # no init, and untracked tuples carry no anchors to ack
    assert summary.trees_acked == 0 and summary.trees_failed == 0 and summary.replayed == 0
    assert sum(counts.values()) < sum(direct_count(src).values())


def test_unanchored_emits_leave_the_tree(settings: ServiceSettings, src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job, summary, counts = run_mode("unanchored", settings, src, tmp_path, monkeypatch)
    assert summary.trees_acked == 1500 and summary.trees_failed == 0 and summary.replayed == 0
    assert counts == {}  # count failed every word, but those words were not in any tree
    ops = acker_ops(job)
    assert ops and {op[0] for op in ops} <= {0, 1}  # inits and acks only: no fail reached the acker


def test_at_most_once_loses_and_never_replays(settings: ServiceSettings, src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job, summary, counts = run_mode("at_most_once", settings, src, tmp_path, monkeypatch)
    assert summary.replayed == 0 and summary.trees_failed == 0
    assert acker_ops(job) == []
    expected = direct_count(src)
    assert sum(counts.values()) < sum(expected.values())
    assert all(counts[w] <= n for w, n in expected.items() if w in counts)
    assert job.committed()[0] == 1500


@pytest.mark.parametrize("tree_records", [1, None], ids=["tree-per-record", "default-trees-of-records"])
def test_dead_letter_after_max_retries_with_headers(
    settings: ServiceSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tree_records: int | None
) -> None:
    """Only the failing records are dead-lettered, after the first try and 2 retries each. With
    a tree per record only they are replayed; with trees of records (the default) the first
    failure of a tree replays each of its records once, alone, so the good ones then go through."""
    src = tmp_path / "in.txt"
    lines = [f"line {i} fine words" if i % 17 else f"line {i} poison-me" for i in range(1, 61)]
    lines = [line for line in lines if zlib.crc32(line.encode()) % 10 != 0 or "poison-me" in line]
    src.write_text("\n".join(lines) + "\n")
    overrides = {} if tree_records is None else {"squall.spout.tree.records": tree_records}
    job, summary, counts = run_mode("dlq", settings, src, tmp_path, monkeypatch, **overrides)
    poisoned = [line for line in lines if "poison-me" in line]
    letters = dead_letters(job)
    assert sorted(v.decode() for v, _ in letters) == sorted(poisoned)
    for _value, h in letters:
        assert h["squall.component"] == "lines"
        assert h["squall.topic"] == f"squall.{job.name}.lines" and h["squall.partition"] == "0"
        assert int(h["squall.offset"]) >= 0
        assert h["squall.attempts"] == "3"  # the first try and 2 retries
        assert h["squall.why"].startswith(f"[split] fail: flaky line at squall.{job.name}.split[")  # the fail's own words
        assert h["squall.error"] == f"[lines] gave up after 3 failures (the last: fail: {h['squall.why']})"
        assert h["squall.cause"] == "fail" and h["squall.task"] == str(job.topology.components["lines"].task_base)
        assert 0 < float(h["squall.first.failure"]) <= float(h["squall.last.failure"]) and 0 < int(h["squall.root"]) < 2**64
    assert summary.dead_lettered == len(poisoned)
    assert summary.replayed == summary.trees_failed - summary.dead_lettered  # every failure but the last is replayed
    if tree_records == 1:
        assert summary.replayed == 2 * len(poisoned)
    else:  # the poisoned records' first trees held good records too: those were replayed once
        assert 2 * len(poisoned) < summary.replayed <= 2 * len(poisoned) + len(lines)
    # everything else went through: once, plus once per replay of a good record (at least once)
    assert counts["fine"] == len(lines) - len(poisoned) + summary.replayed - 2 * len(poisoned)
    assert job.committed()[0] == len(lines)  # dead-lettered records count as done


def test_poison_record_mid_stream_is_dead_lettered_and_the_rest_flows(settings: ServiceSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "in.jsonl"
    rows = [json.dumps({"text": f"alpha beta {i}"}) for i in range(100)]
    rows[50] = "{not json"
    src.write_text("\n".join(rows) + "\n")
    job, summary, counts = run_mode("poison", settings, src, tmp_path, monkeypatch)
    letters = dead_letters(job)
    assert [v for v, _ in letters] == [b"{not json"]
    h = letters[0][1]
    assert h["squall.offset"] == "50" and h["squall.attempts"] == "0" and h["squall.cause"] == "poison"
    assert f"[lines] cannot decode record squall.{job.name}.lines[0]@50" in h["squall.error"]
    assert counts["alpha"] == 99 and counts["beta"] == 99
    assert summary.trees_acked == 99 and summary.dead_lettered == 1
    assert job.committed()[0] == 100


def test_multi_anchored_join_failure_replays_both_input_trees(settings: ServiceSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQUALL_TEST_MODE", "join")
    keys = [f"k{i}" for i in range(30)]
    job = Job(TOPOLOGIES / "modes.py", Path("/dev/null"), tmp_path / "joined.json", settings)
    try:
        job.start(produce_input=False)
        job.wait_ready()
        job.produce("left", (k.encode() for k in keys))
        job.produce("right", (k.encode() for k in keys))
        summary = job.wait(300)
    finally:
        job.close()
    spouts = {s["component"]: s["counters"] for s in job.board_snapshots() if s["kind"] == "spout" and s.get("final")}
    assert spouts["left"]["replayed"] == len(keys) and spouts["right"]["replayed"] == len(keys)
    assert spouts["left"]["failed"] == len(keys) and spouts["right"]["failed"] == len(keys)
    assert spouts["left"]["acked"] == len(keys) and spouts["right"]["acked"] == len(keys)
    assert json.loads((tmp_path / "joined.json").read_text()) == dict.fromkeys(keys, 1)
    assert summary.trees_failed == 2 * len(keys)


def test_topology_overrides_reach_the_workers(settings: ServiceSettings, src: Path, tmp_path: Path) -> None:
    from tests.integration.conftest import EXAMPLES

    job, summary = run_job(EXAMPLES / "wordcount.py", src, tmp_path / "out.json", settings, topology_overrides={"topology.acker.executors": 0})
    assert job.cluster is not None
    assert job.cluster.plan.topology_overrides == {"topology.acker.executors": 0}
    assert acker_ops(job) == []  # the workers saw 0 ackers, so nothing was sent to __acker
    assert summary.trees_acked == 1500 and summary.trees_failed == 0


def test_reset_timeout_keeps_a_tree_alive_at_the_acker_and_at_the_spout(settings: ServiceSettings, src: Path, tmp_path: Path) -> None:
    """Held 6 s with a 3 s timeout, reset every 0.5 s: nothing times out or replays. Before,
    the reset reached only the acker and the spout's own timeout failed every tree (issue 25)."""
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"".join(src.read_bytes().splitlines(keepends=True)[:40]))
    _, summary = run_job(TOPOLOGIES / "resetting.py", lines, None, settings, topology_overrides={"squall.spout.tree.records": 1})
    assert summary.records == summary.trees_acked == 40
    assert summary.trees_failed == 0 and summary.replayed == 0, summary.replays
    assert summary.complete_latency_p50_s >= 6.0
