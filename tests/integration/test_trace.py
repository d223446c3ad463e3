"""Sampled tracing on a real broker: a tree that timed out names the component that held it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.query.trace import read_trees
from streams.monitoring.trace import diagnose, outcome
from tests.integration.conftest import TOPOLOGIES, run_job
from tests.integration.topologies.why import fails

pytestmark = pytest.mark.broker


def test_a_timed_out_tree_is_traced_to_the_bolt_that_held_it(settings: ServiceSettings, tmp_path: Path) -> None:
    lines = [f"line {i} of plain words" for i in range(40)]
    assert not any(fails(line) for line in lines)
    lines[10] = "zzz sleeps here"
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n")
    job, summary = run_job(TOPOLOGIES / "why.py", src, tmp_path / "out.json", settings)
    # The sleep blocks [slow] past the timeout: the trees in flight then time out (the acker's
    # timeout reaches the spout as a fail, or the spout's own timeout fires) and are replayed.
    assert summary.trees_acked == 40 and summary.dead_lettered == 0 and summary.replayed >= 1

    trees = read_trees(job.bootstrap, job.name)
    assert len(trees) >= 41  # every tree is sampled at rate 1, the replay too
    ended = [outcome(ev) for ev in trees.values()]
    assert ended.count("complete") >= 40 and "timed out" in ended
    complete = next(ev for ev in trees.values() if outcome(ev) == "complete")
    kinds = [e.event for e in complete]
    assert kinds[0] == "emit" and {"init", "receive", "execute", "ack", "acker_ack", "complete"} <= set(kinds)
    assert {e.component for e in complete} >= {"lines", "parse", "slow", "count", "__acker"}
    assert diagnose(complete) == []

    timed_out = [ev for ev in trees.values() if outcome(ev) == "timed out"]
    held = [line for ev in timed_out for line in diagnose(ev)]
    assert any("received by [slow]" in line and "[slow] held it" in line for line in held), held  # the tree of "zzz"
    assert all("[slow]" in line for line in held), held  # and those queued behind it waited in [slow]'s input

    shown = subprocess.run(
        [sys.executable, "-m", "service.cli", "trace", job.name, "--timed-out", "-n", "1000", "--bootstrap-servers", job.bootstrap],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert "timed out" in shown.stdout and "[slow] held it" in shown.stdout
    # the summary comes first: every place a tree was held involves [slow] (the trees queued behind
    # "zzz" in transit to it, those whose outputs it had not flushed while it slept, and "zzz"'s own)
    summary_lines = shown.stdout.split("\ntree ")[0].splitlines()
    assert summary_lines and all(line.startswith("held by ") and "[slow]" in line for line in summary_lines), summary_lines
    assert all(line.endswith(f" of {len(timed_out)} timed-out trees") for line in summary_lines), summary_lines
    only = subprocess.run(
        [sys.executable, "-m", "service.cli", "trace", job.name, "--held-by", "slow", "-n", "1000", "--bootstrap-servers", job.bootstrap],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert only.returncode == 0 and only.stdout.count(": timed out, ") == len(timed_out), only.stdout[:500]  # every one: [slow] held them all
    assert "[lines] task" in shown.stdout and " emit edge " in shown.stdout and "-> [parse]" in shown.stdout
