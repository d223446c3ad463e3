"""Reliable word count end to end on the real corpus, on a real broker."""

from __future__ import annotations

import json
import signal
import zlib
from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.run.corpus import read_lines
from service.run.runner import Job
from tests.integration.conftest import EXAMPLES, TOPOLOGIES, assert_at_least, corpus_slice, crash_and_recover, direct_count, kit_run, run_job

pytestmark = [pytest.mark.broker, pytest.mark.embedded]


def test_wordcount_slice_counts_exactly_with_no_failures(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "slice.txt", 4000)
    out = tmp_path / "counts.json"
    job = Job(EXAMPLES / "wordcount.py", src, out, settings)
    try:
        job.start()
        assert job.broker is None  # bootstrap.servers was given: no embedded broker
        summary = job.wait(300)
    finally:
        job.close()
    expected = direct_count(src)
    assert json.loads(out.read_text()) == dict(expected)
    assert kit_run(EXAMPLES / "wordcount.py", src).output() == dict(expected)  # the test kit agrees with the broker
    assert summary.records == 4000
    assert summary.trees_acked == 4000
    assert summary.trees_failed == 0 and summary.replayed == 0
    assert summary.complete_latency_p99_s > 0


@pytest.mark.kafka_only  # decoding is broker-independent (CI time)
def test_non_utf8_input_is_decoded_with_replacement(settings: ServiceSettings, tmp_path: Path) -> None:
    src = tmp_path / "bytes.txt"
    src.write_bytes(b"caf\xe9 au lait\n\xff\xfe hello world\nHELLO don't\n")
    out = tmp_path / "counts.json"
    run_job(EXAMPLES / "wordcount.py", src, out, settings)
    # \xe9 becomes U+FFFD, which the regex does not match: "caf" is a word of its own.
    assert json.loads(out.read_text()) == {"caf": 1, "au": 1, "lait": 1, "hello": 2, "world": 1, "don't": 1}
    assert kit_run(EXAMPLES / "wordcount.py", src).output() == json.loads(out.read_text())


@pytest.mark.parametrize("tree_records", [1, None], ids=["tree-per-record", "default-trees-of-records"])
def test_failed_tuples_are_replayed_until_every_record_is_acked(settings: ServiceSettings, corpus: Path, tmp_path: Path, tree_records: int | None) -> None:
    """A split that fails ~10% of lines once: every failed message id is replayed, once, and
    acked. With a tree per record only the flaky lines fail; with trees of records (the
    default) a flaky line fails its tree-mates too, and each is replayed alone."""
    src = corpus_slice(corpus, tmp_path / "slice.txt", 3000)
    out = tmp_path / "counts.json"
    overrides = None if tree_records is None else {"squall.spout.tree.records": tree_records}
    _, summary = run_job(TOPOLOGIES / "flaky_wordcount.py", src, out, settings, topology_overrides=overrides)
    expected = direct_count(src)
    counts = json.loads(out.read_text())
    assert_at_least(counts, expected)  # no word missing, at least the true counts
    assert sum(counts.values()) > sum(expected.values())  # the half-emitted lines were duplicated
    texts = [raw.decode("utf-8", "replace") for raw in read_lines(src)]
    flaky_lines = len({t for t in texts if zlib.crc32(t.encode()) % 10 == 0})  # each fails on its first delivery
    assert 150 < flaky_lines < 450  # about 10% of 3000 distinct-ish lines
    if tree_records == 1:
        assert summary.trees_failed == flaky_lines
    else:
        assert flaky_lines < summary.trees_failed <= summary.records
    assert summary.replayed == summary.trees_failed
    assert summary.trees_acked == summary.records == 3000
    assert summary.dead_lettered == 0


def test_spout_worker_killed_and_restarted_resumes_from_committed_offset(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "slice.txt", 15000)
    out = tmp_path / "counts.json"
    job = Job(TOPOLOGIES / "single_spout_wordcount.py", src, out, settings)
    at_kill: dict[str, int] = {}

    def while_down() -> None:
        at_kill["committed"] = committed = job.committed()[0]
        assert 0 < committed < 15000

    # after a commit: 3,000 acked trees can come before the spout's first offset commit (CI, on the embedded broker)
    summary = crash_and_recover(job, "lines", after_acked=3000, while_down=while_down, after_commit=True)
    committed = at_kill["committed"]
    expected = direct_count(src)
    counts = json.loads(out.read_text())
    assert_at_least(counts, expected)
    assert job.committed()[0] == 15000
    spouts = sorted((s for s in job.board_snapshots() if s["component"] == "lines"), key=lambda s: s["time"])
    restarted = spouts[-1]["counters"]
    assert restarted["emitted"] == 15000 - committed  # it resumed exactly at the committed offset, each record once
    # what it re-read that its first life had emitted is counted, as restart replays
    assert restarted["replayed"] == restarted["replayed_restart"] > 0
    assert summary.emitted == 15000 + summary.replayed and summary.replays["restart"] == restarted["replayed_restart"]
    assert summary.trees_failed == 0


def test_a_killed_spout_replays_only_what_was_in_flight_not_what_was_acked_behind_a_slow_tree(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    """One line's tree is held by the split bolt until the spout's worker is down; every later
    line is acked. The spout's contiguous commit stays below the held line, and each commit's
    metadata names the finished offsets above it (streams.wire.commits). After a kill -9 of the
    spout's worker, its next life replays the held line's tree only, not the thousands of acked
    lines behind it."""
    lines = corpus_slice(corpus, tmp_path / "slice.txt", 6000).read_text().splitlines()
    release = tmp_path / "release"
    lines[300] = f"HOLD {release}"
    src = tmp_path / "held.txt"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "counts.json"
    job = Job(TOPOLOGIES / "held_line_wordcount.py", src, out, settings)
    at_kill: dict[str, int] = {}

    def while_down() -> None:
        at_kill["committed"] = job.committed()[0]
        release.touch()  # the held tree (and its replay in the next life) may be acked now

    # every line but the held one's tree acked, and a commit after that (1 s period), while the line is held
    summary = crash_and_recover(job, "lines", after_acked=5000, while_down=while_down, after_commit=True, settle_s=2.5)
    committed, tree = at_kill["committed"], job.conf.tree_records
    assert_at_least(json.loads(out.read_text()), direct_count(src))
    assert job.committed()[0] == 6000
    spouts = sorted((s for s in job.board_snapshots() if s["component"] == "lines"), key=lambda s: s["time"])
    restarted = spouts[-1]["counters"]
    print(f"committed at the kill {committed}; the next life emitted {restarted['emitted']} (restart replays {restarted['replayed_restart']})")
    print(summary.lines())
    assert committed <= 300  # the held line's tree kept the contiguous commit below it
    assert restarted["emitted"] == restarted["replayed_restart"] == summary.replays["restart"]  # it emitted only replays
    assert restarted["resumed_finished"] == 6000 - committed - summary.replays["restart"]  # the rest it took as finished, and said so
    assert 1 <= summary.replays["restart"] <= tree < 6000 - committed - 1000  # the held line's tree, not the acked lines after it


def test_a_worker_stopped_mid_run_and_started_again_replays_nothing(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    """SIGTERM on the worker hosting one count executor, then a new one with the same
    tasks: the count bolt's cleanup writes its deltas and acks what it held, and the
    offsets are committed, before the worker exits; so no tree fails, the new worker
    re-reads nothing, and the counts stay exact."""
    src = corpus_slice(corpus, tmp_path / "slice.txt", 20000)
    out = tmp_path / "counts.json"
    job = Job(EXAMPLES / "wordcount.py", src, out, settings)
    try:
        job.start()
        assert job.cluster is not None and job.board is not None
        w = next(i for i in range(len(job.cluster.workers)) if job.cluster.components(i) == ["count"])
        while job.board.total("spout", "acked") < 3000:
            job.board.poll(0.2)
        job.cluster.kill(w, signal.SIGTERM)  # graceful: cleanup, flush, commit
        job.cluster.restart(w)
        summary = job.wait(300)
    finally:
        job.close()
    assert json.loads(out.read_text()) == dict(direct_count(src))
    assert summary.trees_acked == summary.records == 20000
    assert summary.trees_failed == 0 and summary.replayed == 0
    assert summary.reexecuted == {"restart": 0, "takeover": 0}  # a clean stop committed what it flushed: nothing runs twice
    stopped = [s for s in job.board_snapshots() if s["component"] == "count" and s["worker"] == f"w{w}"]
    assert len(stopped) == 2 and all(s["counters"]["executed"] > 0 for s in stopped)  # both lives of the worker executed tuples


@pytest.mark.kafka_only  # the hooks' plumbing is broker-independent (CI time)
def test_auto_task_hooks_run_in_every_worker_task_and_see_every_tuple(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "slice.txt", 500)
    audit = tmp_path / "audit"
    audit.mkdir()
    out = tmp_path / "counts.json"
    _, summary = run_job(TOPOLOGIES / "hooked_wordcount.py", src, out, settings, topology_overrides={"audit.dir": str(audit)})
    assert json.loads(out.read_text()) == dict(direct_count(src))
    seen = {p.stem: json.loads(p.read_text()) for p in audit.glob("*.json")}
    assert sorted(seen) == ["count-3", "count-4", "lines-0", "split-1", "split-2"], sorted(seen)  # every task, each cleaned up once
    words = sum(direct_count(src).values())
    assert seen["lines-0"]["emit"] == summary.records == 500
    assert seen["lines-0"]["spout_ack"] >= 1  # trees of several records each (squall.spout.tree.records)
    assert seen["split-1"].get("emit", 0) + seen["split-2"].get("emit", 0) == words
    assert seen["split-1"].get("bolt_ack", 0) + seen["split-2"].get("bolt_ack", 0) == 500
    assert seen["count-3"].get("bolt_ack", 0) + seen["count-4"].get("bolt_ack", 0) == words
