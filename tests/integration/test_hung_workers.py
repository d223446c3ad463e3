"""Hung workers are restarted (issue 25): an executor stuck in ``execute`` makes its worker exit as
hung, and a worker process that stopped altogether (SIGSTOP) is killed by its supervisor; either
way the worker comes back with its tasks and every record is processed."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.run.runner import Job
from tests.integration.conftest import TOPOLOGIES, assert_at_least, corpus_slice, direct_count

pytestmark = pytest.mark.broker


def test_an_executor_stuck_in_execute_restarts_its_worker(settings: ServiceSettings, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "hung-once"
    monkeypatch.setenv("SQUALL_TEST_HANG_MARKER", str(marker))
    src = corpus_slice(corpus, tmp_path / "slice.txt", 3000)
    out = tmp_path / "counts.json"
    settings = settings.model_copy(update={"restart_initial_secs": 0.5})
    job = Job(TOPOLOGIES / "hanging_split.py", src, out, settings)
    try:
        job.start()
        summary = job.wait(300)
    finally:
        job.close()
    assert marker.exists()  # the split did hang
    assert job.cluster is not None
    w = job.cluster.worker_of("split")
    log = job.cluster.log_path(w).read_text()
    assert "has not come round for 5 s (squall.worker.hang.timeout.secs): hung" in log and "[split (" in log
    where = log[log.index("hung at:") :]  # the hung executor's stack: the line it is stuck on, in the bolt's execute
    assert "hanging_split.py" in where and "in execute" in where and "time.sleep(1)" in where
    assert summary.worker_restarts >= 1
    assert_at_least(json.loads(out.read_text()), direct_count(src))


def test_a_stopped_worker_process_is_killed_and_restarted(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "slice.txt", 10_000)
    out = tmp_path / "counts.json"
    settings = settings.model_copy(update={"restart_initial_secs": 0.5})
    job = Job(TOPOLOGIES / "single_spout_wordcount.py", src, out, settings, conf_overrides={"squall.worker.hang.timeout.secs": 5})
    stopped: list[int] = []

    def freeze() -> None:
        assert job.cluster is not None
        w = job.cluster.worker_of("count")  # at once: the input is all there, and nothing is counted until it comes back
        pid = job.cluster.procs[w].pid
        os.kill(pid, signal.SIGSTOP)  # alive, but runs nothing: no stats, no heartbeat
        stopped.append(pid)

    try:
        job.start()
        t = threading.Thread(target=freeze)
        t.start()
        summary = job.wait(300)
        t.join(10)
    finally:
        job.close()
    assert job.cluster is not None and stopped
    assert job.cluster.hung == 1 and summary.worker_restarts >= 1
    assert_at_least(json.loads(out.read_text()), direct_count(src))
