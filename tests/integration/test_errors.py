"""Errors per component on a real broker: what raised, what failed with a reason, what was poison;
and the tuples a bolt executes again after a crash.

``squall run`` summarises them, ``squall errors`` prints them (with tracebacks), and the
dead letters still carry their records.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.query.errors import read_errors
from service.run.runner import Job
from tests.integration.conftest import EXAMPLES, TOPOLOGIES, assert_at_least, corpus_slice, dead_letters, direct_count, run_job

pytestmark = pytest.mark.broker

LINES = ["the cat sat", "please divide by nothing", "{not json", "reject this one", "the dog"]


def squall(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "service.cli", *args, "--bootstrap-servers", bootstrap], capture_output=True, text=True, timeout=120)


def test_errors_of_every_cause_are_reported_summarised_and_shown_by_squall_errors(settings: ServiceSettings, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES) + "\n")
    job, summary = run_job(TOPOLOGIES / "erring.py", src, tmp_path / "out.json", settings)
    assert json.loads((tmp_path / "out.json").read_text()) == {"the": 2, "cat": 1, "sat": 1, "dog": 1}
    # squall.spout.max.retries = 2: each bad line is delivered three times, then dead-lettered.
    assert summary.errors == {"exception": 3, "fail": 3, "poison": 1}
    assert summary.dead_lettered == 3
    assert any("ZeroDivisionError: division by zero" in line for line in summary.last_errors)

    reports = read_errors(job.bootstrap, job.name)
    by_cause = {cause: [r for r in reports if r.cause == cause] for cause in ("exception", "fail", "poison")}
    assert len(by_cause["exception"]) == 3 and len(by_cause["fail"]) == 3 and len(by_cause["poison"]) == 1
    exc = by_cause["exception"][0]
    assert (exc.component, exc.type, exc.message) == ("check", "ZeroDivisionError", "division by zero")
    assert exc.task == job.topology.components["check"].task_base and exc.worker.startswith("w") and exc.pid > 0
    assert "in execute" in exc.traceback and exc.where.startswith(f"squall.{job.name}.check[0]@")
    fail = by_cause["fail"][0]
    assert (fail.component, fail.type, fail.traceback) == ("check", "Fail", "")
    assert fail.message == "rejected: 'reject this one' names no known user"
    poison = by_cause["poison"][0]
    assert (poison.component, poison.type) == ("lines", "JSONDecodeError")
    assert poison.where.endswith("@2") and "in translate" in poison.traceback  # the third line, offset 2 of one partition
    assert {r.component for r in read_errors(job.bootstrap, job.name, "lines")} == {"lines"}

    letters = dead_letters(job)
    assert sorted(v.decode() for v, _ in letters) == sorted(["please divide by nothing", "{not json", "reject this one"])
    whys = {v.decode(): h.get("squall.why") for v, h in letters}  # the fail op's words, carried by the acker to the spout
    assert whys == {
        "please divide by nothing": "[check] ZeroDivisionError: division by zero",
        "reject this one": "[check] fail: rejected: 'reject this one' names no known user",
        "{not json": None,  # a poison record never made a tree: its squall.error says why
    }
    assert {h["squall.error"] for v, h in letters if v == b"please divide by nothing"} == {
        "[lines] gave up after 3 failures (the last: fail: [check] ZeroDivisionError: division by zero)"
    }

    shown = squall(job.bootstrap, "errors", job.name, "check", "--traceback")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.count("ZeroDivisionError: division by zero on ") == 3
    assert "raise FailedException" in shown.stdout or "Fail: rejected" in shown.stdout
    assert 'print(1 / len(""))' in shown.stdout  # the traceback's source line
    as_json = json.loads(squall(job.bootstrap, "errors", job.name, "--json", "-n", "2").stdout)
    assert len(as_json) == 2 and {"component", "task", "cause", "type", "traceback", "where"} <= set(as_json[0])

    unknown = squall(job.bootstrap, "errors", "no-such-topology")
    assert unknown.returncode == 2 and unknown.stderr.strip().startswith("error: [no-such-topology] no such topology")
    assert "Traceback" not in unknown.stderr and len(unknown.stderr.strip().splitlines()) == 1


def test_a_bolt_killed_mid_stream_counts_the_tuples_it_executes_again(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    """kill -9 of the worker running count: its new life re-reads from the last commit what
    its old life had flushed (their acks were sent, so nothing replays them), and counts each
    of those tuples as a re-execution (issue 25: re-executions no counter showed)."""
    src = corpus_slice(corpus, tmp_path / "slice.txt", 20000)
    out = tmp_path / "counts.json"
    # count commits its input every 60 s, not every 1 s: the kill always finds flushed records
    # past the last commit (with 1 s, a kill just after a commit found none: the test was flaky)
    job = Job(EXAMPLES / "wordcount.py", src, out, settings, conf_overrides={"squall.bolt.commit.period.secs": 60})
    try:
        job.start()
        assert job.cluster is not None and job.board is not None
        w = next(i for i in range(len(job.cluster.workers)) if job.cluster.components(i) == ["count"])
        while job.board.total("spout", "acked") < 3000:
            job.board.poll(0.2)
        job.cluster.kill(w)  # SIGKILL: no flush, no commit
        time.sleep(1.0)
        job.cluster.restart(w)
        summary = job.wait(300)
    finally:
        job.close()
    counts = json.loads(out.read_text())
    expected = direct_count(src)
    assert_at_least(counts, expected)
    assert summary.reexecuted["restart"] > 0 and summary.reexecuted["takeover"] == 0  # squall run restarts it in place
    assert f"bolt re-executions  {summary.reexecuted['restart']} (restart {summary.reexecuted['restart']}, takeover 0)" in summary.lines()
    executed = sum(s["counters"]["executed"] for s in job.board_snapshots() if s["component"] == "count")
    assert summary.reexecuted["restart"] < executed  # a part of what count executed, never more
