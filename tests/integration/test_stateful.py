"""Stateful bolts end to end (issue 26): the stateful word count is exact with no faults and when the
bolt fails tuples (rollbacks), on both brokers. The kill -9 test is test_stateful_kills.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.run.runner import Job
from tests.integration.conftest import EXAMPLES, TOPOLOGIES, corpus_slice, direct_count, kit_run, run_job

pytestmark = [pytest.mark.broker, pytest.mark.embedded]


def registered(job: Job, name: str) -> int:
    """A counter the stateful tasks registered, summed over every executor instance seen."""
    return int(sum(s["counters"].get(name, 0) for s in job.board_snapshots() if s["component"] == "count"))


@pytest.mark.kafka_only  # the embedded broker runs the changelog-state test of this module (CI time)
def test_the_stateful_word_count_is_exact(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "slice.txt", 5000)
    out = tmp_path / "counts.json"
    job, summary = run_job(EXAMPLES / "wordcount_stateful.py", src, out, settings)
    assert json.loads(out.read_text()) == dict(direct_count(src))
    assert kit_run(EXAMPLES / "wordcount_stateful.py", src).output() == json.loads(out.read_text())  # the test kit agrees with the broker
    assert summary.trees_acked == summary.records == 5000 and summary.replayed == 0
    assert registered(job, "state_checkpoints") > 0 and registered(job, "state_rollbacks") == 0


def test_state_in_a_compacted_changelog_topic_needs_no_database(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "slice.txt", 3000)
    out = tmp_path / "counts.json"
    job, summary = run_job(EXAMPLES / "wordcount_stateful.py", src, out, settings, conf_overrides={"squall.state.url": "kafka://"})
    assert json.loads(out.read_text()) == dict(direct_count(src))
    assert summary.trees_acked == summary.records == 3000 and registered(job, "state_checkpoints") > 0
    assert not list(tmp_path.rglob("*.db"))  # no SQLite file was written


def stored_items(url: str, bootstrap: str, state: str) -> list[tuple[int, str, str]]:
    """Every stored ``(task, key, value)`` of ``state`` (the runtime's own keys too)."""
    from streams.kafka.changelog_store import ChangelogKvStore
    from streams.state import open_backend

    store = ChangelogKvStore(bootstrap) if url.startswith("kafka://") else open_backend(url)
    try:
        return list(store.kv_items(state))
    finally:
        store.close()


# CI time: kafka:// state on the embedded broker (its visible aborted records) is covered by
# test_state_in_a_compacted_changelog_topic_needs_no_database and test_changelog_store.py.
@pytest.mark.kafka_only
def test_a_stateful_windowed_count_holds_every_word_once_in_its_state_or_its_windows(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    """The windows are in the checkpoint: words counted (their window fired) plus words still held in
    a window equal the true count; the tuples were acked at checkpoints, before their windows fired."""
    from tests.integration.topologies.windowed_stateful_count import held_words

    src = corpus_slice(corpus, tmp_path / "slice.txt", 3000)
    out = tmp_path / "counts.json"
    job, summary = run_job(TOPOLOGIES / "windowed_stateful_count.py", src, out, settings, conf_overrides={"squall.state.url": "kafka://"})
    counts = json.loads(out.read_text())
    held = held_words(stored_items("kafka://", job.bootstrap, f"{job.name}.count"))
    truth = direct_count(src)
    assert sum(held.values()) > 0 and sum(counts.values()) > 0
    assert {w: counts.get(w, 0) + held.get(w, 0) for w in truth} == dict(truth)
    assert set(counts) | set(held) == set(truth)
    assert summary.trees_acked == summary.records == 3000


@pytest.mark.kafka_only  # the roll-back is broker-independent; the embedded broker runs the changelog-state test (CI time)
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
