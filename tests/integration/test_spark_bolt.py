"""SparkBolts in reliable topologies: real Spark (local[*]) drivers in worker processes,
on a real broker. Each test starts its own driver (~20 s before the first batch)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.run.runner import Job
from streams.kafka.clients import true_end_offsets
from streams.state import TransactionalState, open_backend
from streams.wire.naming import component_topic
from tests.integration.conftest import EXAMPLES, TOPOLOGIES, assert_at_least, corpus_slice, crash_and_recover, direct_count, run_job

pytestmark = pytest.mark.broker


def bolt_counter(job: Job, component: str, counter: str) -> float:
    return float(sum(s["counters"].get(counter, 0) for s in job.board_snapshots() if s["component"] == component and s["kind"] == "bolt"))


def test_spark_rows_that_raise_fail_and_are_replayed(settings: ServiceSettings, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flaky = tmp_path / "flaky"
    flaky.mkdir()
    monkeypatch.setenv("SQUALL_TEST_FLAKY_DIR", str(flaky))
    monkeypatch.setenv("SQUALL_TEST_SPARK_BATCH", "pandas")  # the pandas path, with its row-by-row retry
    src = corpus_slice(corpus, tmp_path / "slice.txt", 600)
    out = tmp_path / "counts.json"
    job, summary = run_job(TOPOLOGIES / "spark_wordcount.py", src, out, settings)
    counts = json.loads(out.read_text())
    assert_at_least(counts, direct_count(src))
    assert summary.trees_failed > 0  # those trees failed ...
    assert summary.replayed == summary.trees_failed  # ... and each was replayed
    assert summary.trees_acked == summary.records == 600
    # Each failed row failed its tree: every message id of a tree of records (and at least the
    # failed row's own) counts as failed and is replayed alone.
    assert 0 < bolt_counter(job, "split", "failed") <= summary.trees_failed
    assert summary.dead_lettered == 0


def test_spark_driver_killed_mid_run_restarts_from_checkpoint_and_loses_nothing(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "slice.txt", 5000)
    out = tmp_path / "counts.json"
    job = Job(EXAMPLES / "wordcount_spark.py", src, out, settings)
    summary = crash_and_recover(job, "split", after_acked=2000)
    print(summary.lines())
    assert_at_least(json.loads(out.read_text()), direct_count(src))
    assert summary.trees_acked == summary.records == 5000
    assert job.committed() == {0: 2500, 1: 2500}
    checkpoint = settings.data_dir / "runs" / job.name / "spark" / job.name / "split"
    assert (checkpoint / "commits").is_dir()  # the restart resumed from this checkpoint


def test_committer_spark_bolt_skips_a_replayed_batch_id(settings: ServiceSettings, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "state.db"
    crash = tmp_path / "crash"
    crash.mkdir()
    monkeypatch.setenv("SQUALL_TEST_STATE_DB", str(db))
    monkeypatch.setenv("SQUALL_TEST_CRASH_DIR", str(crash))
    src = corpus_slice(corpus, tmp_path / "slice.txt", 1200)
    job = Job(TOPOLOGIES / "spark_committer.py", src, None, settings)
    try:
        job.start()
        assert job.cluster is not None
        w = job.cluster.worker_of("count")
        proc = job.cluster.procs[w]
        deadline = time.monotonic() + 240
        while proc.poll() is None:  # the injected crash kills the query, then the worker
            assert time.monotonic() < deadline, "the injected crash never happened"
            time.sleep(0.5)
        assert proc.returncode != 0 and (crash / "crashed").exists()
        job.cluster.expected_down.add(w)
        job.cluster.restart(w)  # resumes from the checkpoint: the same batch id again
        summary = job.wait(300)
    finally:
        job.close()
    state = TransactionalState(open_backend(f"sqlite:///{db}"), "counts")
    batches: dict[int, list[tuple[int, int]]] = {}
    for _writer, txid, written, skipped in state.commits():
        batches.setdefault(txid, []).append((written, skipped))
    replayed = [txid for txid, applies in batches.items() if len(applies) > 1]
    assert len(replayed) == 1  # exactly the batch that crashed after its state write
    (written, _), (again, skipped) = batches[replayed[0]]
    assert again == 0 and skipped == written > 0  # its second run skipped every key it had written
    assert state.items() == dict(direct_count(src))  # exactly once: nothing counted twice
    assert summary.trees_acked == summary.records == 1200 and summary.trees_failed == 0


def test_spark_bolt_runs_on_a_standalone_cluster_master(settings: ServiceSettings, corpus: Path, tmp_path: Path, spark_standalone: tuple[str, Path]) -> None:
    master, work = spark_standalone
    src = corpus_slice(corpus, tmp_path / "slice.txt", 2000)
    out = tmp_path / "counts.json"
    job, summary = run_job(EXAMPLES / "wordcount_spark.py", src, out, settings, topology_overrides={"spark.master": master})
    assert json.loads(out.read_text()) == dict(direct_count(src))
    assert summary.trees_acked == summary.records == 2000 and summary.trees_failed == 0 and summary.replayed == 0
    # the Spark driver's per-batch commits account for every line and every word (this test
    # also stands for the plain word count on local[*], which every other test here runs)
    assert bolt_counter(job, "split", "executed") == 2000
    assert bolt_counter(job, "split", "emitted") == sum(direct_count(src).values())
    assert bolt_counter(job, "split", "acker_ops") > 0
    # the source committed what it processed to the bolt's group (lag dashboards): every
    # record of its topic, the lines' packs and one warm-up record per task
    committed = job.committed("split")
    split_topic = component_topic(job.name, "split")
    ends = true_end_offsets(job.bootstrap, [(split_topic, p) for p in committed])
    assert committed == {p: ends[(split_topic, p)] for p in committed} and all(off >= 2 for off in committed.values())
    assert job.cluster is not None
    log = job.cluster.log_path(job.cluster.worker_of("split")).read_text()
    assert f"Spark query started (master {master}" in log
    apps = list(work.glob("app-*/*/stderr"))  # the cluster's worker ran this app's executor
    assert apps, f"no executor ran on the standalone worker under {work}"
