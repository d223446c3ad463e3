"""Every grouping's distribution rule, observed on a real broker (one run, one test each)."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from service.brokers.admin import read_topic
from service.config import ServiceSettings
from service.run.runner import Job
from tests.integration.conftest import TOPOLOGIES

pytestmark = pytest.mark.broker
N = 400
KEYS = 20


@pytest.fixture(scope="module")
def run(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    settings = ServiceSettings(bootstrap_servers=bootstrap, data_dir=tmp_path_factory.mktemp("groupings"))
    job = Job(TOPOLOGIES / "groupings.py", Path("/dev/null"), settings.data_dir / "seen.json", settings)
    try:
        job.start(produce_input=False)
        job.wait_ready()
        assert job.board is not None
        layout = [dict(snap) for snap in job.board.latest.values()]
        job.produce("src", (f"k{i % KEYS},{i}".encode() for i in range(N)))
        summary = job.wait(300)
        seen = read_topic(job.bootstrap, f"squall.{job.name}.seen")
    finally:
        job.close()
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in seen:
        by[rec["grouping"]].append(rec)
    return {"by": by, "summary": summary, "snaps": layout, "topology": job.topology}


def tasks_of(run: dict[str, Any], component: str) -> list[int]:
    return list(run["topology"].components[component].task_ids)


def test_run_acked_everything(run: dict[str, Any]) -> None:
    assert run["summary"].trees_acked == N and run["summary"].trees_failed == 0


def test_shuffle_is_balanced(run: dict[str, Any]) -> None:
    counts = Counter(r["task"] for r in run["by"]["shuffle"])
    assert sorted(counts) == tasks_of(run, "shuffle")
    assert sum(counts.values()) == N
    assert max(counts.values()) - min(counts.values()) <= 1  # one emitter: round-robin over a permutation


def test_fields_same_key_same_task(run: dict[str, Any]) -> None:
    task_of_key: dict[str, set[int]] = defaultdict(set)
    for r in run["by"]["fields"]:
        task_of_key[r["key"]].add(r["task"])
    assert len(task_of_key) == KEYS
    assert all(len(tasks) == 1 for tasks in task_of_key.values())
    assert len({t for tasks in task_of_key.values() for t in tasks}) > 1  # and keys spread out


def test_all_reaches_every_task(run: dict[str, Any]) -> None:
    per_task: dict[int, set[int]] = defaultdict(set)
    for r in run["by"]["all"]:
        per_task[r["task"]].add(r["n"])
    assert sorted(per_task) == tasks_of(run, "all")
    assert all(ns == set(range(N)) for ns in per_task.values())


def test_global_goes_to_the_lowest_task(run: dict[str, Any]) -> None:
    assert {r["task"] for r in run["by"]["global"]} == {min(tasks_of(run, "global"))}
    assert len(run["by"]["global"]) == N


def test_none_acts_as_shuffle(run: dict[str, Any]) -> None:
    counts = Counter(r["task"] for r in run["by"]["none"])
    assert sorted(counts) == tasks_of(run, "none") and max(counts.values()) - min(counts.values()) <= 1


def test_direct_reaches_only_the_named_task(run: dict[str, Any]) -> None:
    targets = tasks_of(run, "direct")
    assert len(run["by"]["direct"]) == N
    assert all(r["task"] == targets[r["n"] % len(targets)] for r in run["by"]["direct"])


def test_local_or_shuffle_prefers_tasks_in_the_same_worker(run: dict[str, Any]) -> None:
    live = [s for s in run["snaps"] if s.get("tasks")]
    src_worker = next(s["worker"] for s in live if s["component"] == "src")
    local = {t for s in live if s["component"] == "local_or_shuffle" and s["worker"] == src_worker for t in s["tasks"]}
    got = {r["task"] for r in run["by"]["local_or_shuffle"]}
    assert local, "the plan puts a local_or_shuffle executor in the spout's worker"
    assert got == local
    assert len(run["by"]["local_or_shuffle"]) == N


def test_custom_grouping_follows_choose_tasks(run: dict[str, Any]) -> None:
    first, second = tasks_of(run, "custom")[:2]
    assert len(run["by"]["custom"]) == N
    assert all(r["task"] == (first if r["n"] % 2 == 0 else second) for r in run["by"]["custom"])
