"""Stateful bolts end to end (issue 26): the stateful word count is exact with no faults and when the
bolt fails tuples (rollbacks), on both brokers. The kill -9 test is test_stateful_kills.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.runner import Job
from tests.integration.conftest import EXAMPLES, TOPOLOGIES, corpus_slice, direct_count, run_job

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
