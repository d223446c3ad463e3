"""The worker builds every executor through one typed path: a WorkerPlan, one ExecutorEnv each, one table of kinds."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from service.control.scheduling import worker_plan
from service.worker.process import EXECUTOR_KINDS, build_executors, executor_class, executor_kind, stack_of
from streams.config import resolve
from streams.model.loader import load_topology
from streams.runtime.bolt import BoltExecutor
from streams.runtime.executor import Executor
from streams.runtime.spout import SpoutExecutor
from streams.wire.naming import ACKER_COMPONENT

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("kind", sorted(EXECUTOR_KINDS))
def test_every_kind_is_an_executor_class(kind: str) -> None:
    cls = executor_class(kind)
    assert isinstance(cls, type) and issubclass(cls, Executor)


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(KeyError):
        executor_class("nimbus")


def test_the_kind_of_each_component() -> None:
    topology = load_topology(ROOT / "examples" / "wordcount_spark.py")
    conf = resolve(topology.conf)
    assert executor_kind(topology, "lines", conf) == "spout"
    assert executor_kind(topology, "count", conf) == "bolt"
    assert executor_kind(topology, "split", conf) == "spark"
    assert executor_kind(topology, ACKER_COMPONENT, conf) == "acker"
    assert executor_kind(topology, ACKER_COMPONENT, resolve({"squall.acker.runtime": "faust"})) == "acker-faust"


def test_build_executors_gives_each_one_its_tasks_config_and_worker(tmp_path: Path) -> None:
    path = ROOT / "examples" / "wordcount.py"
    topology = load_topology(path, "wt")
    conf = resolve(topology.conf, {"topology.workers": 1})
    plan = worker_plan(
        path, topology, conf, "127.0.0.1:1", tmp_path, topology_overrides={"topology.workers": 1}, service_conf={"squall.stats.interval.secs": 2}
    )
    executors = build_executors(plan, 0)
    try:
        spouts = [e for e in executors if isinstance(e, SpoutExecutor)]
        assert {e.component for e in spouts} == {"lines"} and len(spouts) == topology.components["lines"].parallelism
        assert sorted(t for e in spouts for t in e.tasks) == list(range(topology.components["lines"].num_tasks))
        assert {e.component for e in executors} == {"lines", "split", "count", ACKER_COMPONENT}
        bolts = [e for e in executors if isinstance(e, BoltExecutor)]
        assert bolts and all(e.worker == "w0" and e.conf.stats_interval_secs == 2 for e in bolts)
        assert len({id(e.local) for e in executors}) == 1  # one LocalTasks per worker (local-or-shuffle)
        assert sorted(t for e in executors if e.component == "count" for t in e.tasks) == list(range(topology.components["count"].num_tasks))
    finally:
        for e in executors:
            if isinstance(e, SpoutExecutor):
                e.results.close()
                if e.feed is not None:
                    e.feed.close()


def test_stack_of_a_blocked_thread_names_the_call_it_waits_in() -> None:
    """What a hung executor's last log line shows: the Python line its thread is blocked on."""
    release = threading.Event()

    def stuck_in_execute() -> None:
        release.wait(30)

    t = threading.Thread(target=stuck_in_execute, name="split-0", daemon=True)
    t.start()
    try:
        deadline = time.monotonic() + 5
        while "release.wait(30)" not in stack_of(t) and time.monotonic() < deadline:
            time.sleep(0.01)
        stack = stack_of(t)
        assert "in stuck_in_execute" in stack and "release.wait(30)" in stack
        assert "waiter.acquire(" in stack.rstrip().splitlines()[-1]  # innermost call last: threading.Condition.wait
    finally:
        release.set()
        t.join(5)
    assert stack_of(t) == ""  # an ended thread has no stack
