"""The stateful word count stays exact after three kill -9s of random workers, on each state backend
(SQLite, PostgreSQL and a compacted changelog topic), on Apache Kafka (issue 26). One broker: the backends are what differs, and
CI has 45 minutes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.run.runner import Job
from tests.integration.conftest import EXAMPLES, TOPOLOGIES, corpus_slice, direct_count, run_killing_random_workers
from tests.integration.test_stateful import registered

pytestmark = pytest.mark.broker


def killed_three_times(topology: Path, src: Path, out: Path, settings: ServiceSettings, state_url: str) -> Job:
    """Run ``topology`` on ``src`` with state at ``state_url`` while three random workers are killed -9; checks the three restarts."""
    settings = settings.model_copy(update={"restart_initial_secs": 0.5})
    overrides = {"squall.state.url": state_url, "topology.message.timeout.secs": 10, "topology.max.spout.pending": 300}
    job = Job(topology, src, out, settings, conf_overrides=overrides)
    kills: list[str] = []
    summary = run_killing_random_workers(job, 3, kills)
    print("\n".join(kills), f"replays {summary.replays}, duplicates skipped {registered(job, 'state_duplicates')}", sep="\n")
    assert len(kills) == summary.worker_restarts == 3
    return job


def test_three_kill9s_of_random_workers_leave_the_count_exact(settings: ServiceSettings, corpus: Path, tmp_path: Path, kv_state_url: str) -> None:
    src = corpus_slice(corpus, tmp_path / "slice.txt", 20_000)
    out = tmp_path / "counts.json"
    killed_three_times(EXAMPLES / "wordcount_stateful.py", src, out, settings, kv_state_url)
    assert json.loads(out.read_text()) == dict(direct_count(src))  # exact, although the kills replayed words


def test_a_stateful_windowed_count_survives_three_kill9s(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    """Windows are checkpointed with the state (kafka://): after the kills every word is counted once or held once."""
    from tests.integration.test_stateful import stored_items
    from tests.integration.topologies.windowed_stateful_count import held_words

    src = corpus_slice(corpus, tmp_path / "slice.txt", 20_000)
    out = tmp_path / "counts.json"
    job = killed_three_times(TOPOLOGIES / "windowed_stateful_count.py", src, out, settings, "kafka://")
    counts = json.loads(out.read_text())
    held = held_words(stored_items("kafka://", job.bootstrap, f"{job.name}.count"))
    truth = direct_count(src)
    assert {w: counts.get(w, 0) + held.get(w, 0) for w in set(truth) | set(counts) | set(held)} == dict(truth)
