"""The stateful word count stays exact after three kill -9s of random workers, on each state backend
(SQLite and PostgreSQL), on Apache Kafka (issue 26). One broker: the backends are what differs, and
CI has 45 minutes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.runner import Job
from tests.integration.conftest import EXAMPLES, corpus_slice, direct_count, kill_workers
from tests.integration.test_stateful import registered

pytestmark = pytest.mark.broker


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
