"""Stateful bolts end to end (issue 26): the stateful word count is exact with no faults, after three
kill -9s of random workers (SQLite and PostgreSQL), and when the bolt fails tuples (rollbacks)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.runner import Job
from tests.integration.conftest import EXAMPLES, TOPOLOGIES, corpus_slice, direct_count, kill_workers, run_job

pytestmark = [pytest.mark.broker, pytest.mark.embedded]


def registered(job: Job, name: str) -> int:
    """A counter the stateful tasks registered, summed over every executor instance seen."""
    return int(sum(s["counters"].get(name, 0) for s in job.board_snapshots() if s["component"] == "count"))


def test_the_stateful_word_count_is_exact(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "slice.txt", 5000)
    out = tmp_path / "counts.json"
    job, summary = run_job(EXAMPLES / "wordcount_stateful.py", src, out, settings)
    assert json.loads(out.read_text()) == dict(direct_count(src))
    assert summary.trees_acked == summary.records == 5000 and summary.replayed == 0
    assert registered(job, "state_checkpoints") > 0 and registered(job, "state_rollbacks") == 0


def test_three_kill9s_of_random_workers_leave_the_count_exact(settings: ServiceSettings, corpus: Path, tmp_path: Path, state_url: str) -> None:
    src = corpus_slice(corpus, tmp_path / "slice.txt", 20_000)
    settings = settings.model_copy(update={"restart_initial_secs": 0.5})
    overrides = {"squall.state.url": state_url, "topology.message.timeout.secs": 10, "topology.max.spout.pending": 300}
    out = tmp_path / "counts.json"
    job = Job(EXAMPLES / "wordcount_stateful.py", src, out, settings, conf_overrides=overrides)
    rng = random.Random()
    kills: list[str] = []
    try:
        job.start()
        assert job.cluster is not None
        workers = [rng.randrange(len(job.cluster.workers)) for _ in range(3)]
        killer = kill_workers(job, workers, rng, kills, pause_s=(1.0, 2.5))
        summary = job.wait(600)
        killer.join(5)
    finally:
        job.close()
    print("\n".join(kills), f"replays {summary.replays}, duplicates skipped {registered(job, 'state_duplicates')}", sep="\n")
    assert len(kills) == summary.worker_restarts == 3
    assert json.loads(out.read_text()) == dict(direct_count(src))  # exact, although the kills replayed words


def test_failed_tuples_roll_back_and_the_count_stays_exact(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    """A rollback fails every tuple its task ran since the checkpoint, so a record can be caught in
    several; with few retries it would be dead-lettered (and its words rightly missing)."""
    src = corpus_slice(corpus, tmp_path / "slice.txt", 5000)
    out = tmp_path / "counts.json"
    job, summary = run_job(TOPOLOGIES / "flaky_stateful.py", src, out, settings, topology_overrides={"squall.spout.max.retries": 1000})
    rollbacks = registered(job, "state_rollbacks")
    print(f"rollbacks {rollbacks}, replays {summary.replays}, dead-lettered {summary.dead_lettered}, duplicates skipped {registered(job, 'state_duplicates')}")
    assert rollbacks > 10 and summary.replayed > 0 and summary.dead_lettered == 0
    assert json.loads(out.read_text()) == dict(direct_count(src))
