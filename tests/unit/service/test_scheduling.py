"""Fixed task assignment (Storm's Nimbus): every task owned by exactly one executor."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.control.scheduling import ExecutorAssignment, WorkerPlan, executor_tasks, plan_workers, worker_plan
from streams.config import resolve
from streams.model.loader import load_topology
from streams.wire.naming import ACKER_COMPONENT

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n))))
def test_executor_tasks_split_every_task_once_in_contiguous_even_ranges(case: tuple[int, int]) -> None:
    n, e = case
    ranges = executor_tasks(n, e)
    assert len(ranges) == e
    assert [t for r in ranges for t in r] == list(range(n))  # each task once, in order
    sizes = [len(r) for r in ranges]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)


@pytest.mark.parametrize("bad", [0, 5])
def test_executor_tasks_refuses_more_executors_than_tasks_or_none(bad: int) -> None:
    with pytest.raises(ValueError, match=r"executors must be 1\.\.4"):
        executor_tasks(4, bad)


@given(workers=st.integers(1, 9), count_executors=st.integers(1, 4), ackers=st.integers(0, 3))
def test_a_plan_gives_every_task_of_every_component_to_exactly_one_executor(workers: int, count_executors: int, ackers: int) -> None:
    topology = load_topology(EXAMPLES / "wordcount.py")
    topology.components["count"].parallelism = count_executors
    conf = resolve(topology.conf, {"topology.workers": workers, "topology.acker.executors": ackers})
    plan = plan_workers(topology, conf)
    typed = worker_plan(EXAMPLES / "wordcount.py", topology, conf, "127.0.0.1:1", EXAMPLES)
    assert WorkerPlan.model_validate_json(typed.to_json()) == typed  # the plan file round-trips
    assert [list(w) for w in typed.workers] == plan
    owned: dict[str, list[int]] = {}
    for worker in plan:
        for e in worker:
            owned.setdefault(e.component, []).extend(e.tasks)
    want = {c.id: c.num_tasks for c in topology.components.values()}
    if ackers:
        want[ACKER_COMPONENT] = ackers
    assert {c: sorted(ts) for c, ts in owned.items()} == {c: list(range(n)) for c, n in want.items()}
    assert sum(1 for w in plan for e in w if e.component == "count") == count_executors
    assert len(plan) == min(workers, sum(len(w) for w in plan))  # no empty worker


def test_malformed_plan_entries_are_refused() -> None:
    with pytest.raises(ValueError, match="must be \\[component, \\[tasks\\]\\]"):
        ExecutorAssignment.from_json(["count", 3])
