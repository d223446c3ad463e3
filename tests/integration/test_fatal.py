"""A fatal error stops the worker with a non-zero exit and names the component."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.exceptions import WorkerDied
from service.query.errors import read_errors
from service.run.runner import Job
from tests.integration.conftest import TOPOLOGIES

pytestmark = pytest.mark.broker


def test_fatal_error_in_a_spout_stops_its_worker_non_zero(settings: ServiceSettings, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("a b c\n")
    # Its restarts fail the same way until the policy gives up (5 of them): from 0.2 s, the
    # backoff adds up to 6 s instead of 31 (CI time).
    settings = settings.model_copy(update={"restart_initial_secs": 0.2})
    job = Job(TOPOLOGIES / "broken.py", src, None, settings)
    try:
        with pytest.raises(WorkerDied) as exc:  # start() waits for readiness, so it sees the death
            job.start()
            job.wait(120)
    finally:
        job.close()
    msg = str(exc.value)
    assert "worker w0 exited with 1" in msg
    assert "[src] cannot reach the source system" in msg
    (fatal,) = read_errors(job.bootstrap, job.name)  # published and flushed before the worker exited
    assert (fatal.component, fatal.cause, fatal.task) == ("src", "fatal", -1)
    assert "cannot reach the source system" in fatal.message and "in open" in fatal.traceback
