"""The service's pure parts: control transitions, slots, reconcile decisions, crash backoff,
the drain condition, CLI argument parsing (no broker, no processes)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from service.cli.main import app
from service.control.client import parse_conf, parse_executors
from service.control.record import Status, TopologyRecord, activate, deactivate, kill, rebalance, rebalanced
from service.control.scheduling import ExecutorAssignment
from service.control.slots import slot_of
from service.exceptions import ControlError, UsageError
from service.process.restarts import CrashHistory, RestartPolicy
from service.supervisor.reconcile import Running, WorkerKey, WorkerSpec, decide, desired_workers
from service.worker.drain import draining_elsewhere

TASKS = {"lines": 2, "split": 1, "count": 4}


def E(component: str, *tasks: int) -> ExecutorAssignment:
    return ExecutorAssignment(component, tasks)


def record(**kw: object) -> TopologyRecord:
    return TopologyRecord.new("wc", "src", "wc.py", {}, now=100.0).model_copy(update=kw)


def test_transitions_bump_the_version_and_say_what_spouts_do() -> None:
    rec = record()
    off = deactivate(rec, 101.0)
    assert (off.status, off.spouts_active, off.version) == (Status.INACTIVE, False, 2)
    on = activate(off, 102.0)
    assert (on.status, on.spouts_active, on.version) == (Status.ACTIVE, True, 3)
    assert activate(on, 103.0) is on  # no change, no new version
    moving = rebalance(on, 104.0, 3, {"count": 4}, TASKS)
    assert moving.status == Status.REBALANCING and moving.spouts_active and moving.executors == {"count": 4} and moving.workers == 3
    assert rebalanced(moving, 105.0).status == Status.ACTIVE
    paused = rebalance(off, 106.0, 2, {}, TASKS)  # Storm keeps a deactivated topology inactive (issue 25)
    assert paused.status == Status.REBALANCING and not paused.spouts_active
    again = rebalance(paused, 106.5, 3, {}, TASKS)  # a second rebalance before the first settled
    assert not again.spouts_active and rebalanced(again, 107.0).status == Status.INACTIVE
    assert activate(again, 107.5).spouts_active and rebalanced(activate(again, 107.5), 108.0).status == Status.ACTIVE
    gone = kill(on, 5.0, 110.0)
    assert gone.status == Status.KILLED and not gone.spouts_active and not gone.killed_by(114.9) and gone.killed_by(115.0)


def test_refused_transitions_name_the_topology_or_component() -> None:
    with pytest.raises(ControlError, match=r"^\[count\] rebalance -e count=5: executors must be 1\.\.4"):
        rebalance(record(), 1.0, None, {"count": 5}, TASKS)
    with pytest.raises(ControlError, match=r"^\[bolt\] rebalance -e: no such component in wc"):
        rebalance(record(), 1.0, None, {"bolt": 1}, TASKS)
    with pytest.raises(ControlError, match=r"^\[wc\] rebalance -n must be >= 1"):
        rebalance(record(), 1.0, 0, {}, TASKS)
    with pytest.raises(ControlError, match=r"^\[wc\] cannot activate: the topology is being killed"):
        activate(kill(record(), 1.0, 1.0), 2.0)


def test_desired_workers_are_those_whose_slot_this_supervisor_owns() -> None:
    rec = record()
    plans = {"wc": {1: [[E("lines", 0), E("__acker", 0)], [E("lines", 1)], [E("split", 0)], [E("count", 0, 1), E("count", 2, 3)]]}}
    everything = desired_workers([rec], plans, set(range(32)), now=0.0)
    assert sorted(everything) == [WorkerKey("wc", i) for i in range(4)]
    assert everything[WorkerKey("wc", 3)].components == ["count", "count"]
    mine = {slot_of("wc", 0)}
    assert set(desired_workers([rec], plans, mine, now=0.0)) >= {WorkerKey("wc", 0)}
    assert desired_workers([kill(rec, 0.0, 0.0)], plans, set(range(32)), now=1.0) == {}  # killed and due
    assert desired_workers([rec], {}, set(range(32)), now=0.0) == {}  # not planned (failed to load)


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 31)), st.sets(st.integers(0, 31)))
def test_two_supervisors_with_disjoint_slots_never_both_run_a_worker(a: set[int], b: set[int]) -> None:
    b = b - a
    plans = {f"t{i}": {1: [[E("x", w)] for w in range(6)]} for i in range(5)}
    recs = [record(name=n) for n in plans]
    mine, theirs = desired_workers(recs, plans, a, 0.0), desired_workers(recs, plans, b, 0.0)
    assert not set(mine) & set(theirs)
    if a | b == set(range(32)):
        assert len(mine) + len(theirs) == 30  # every worker runs somewhere


def test_decide_starts_stops_and_restarts_changed_workers() -> None:
    k0, k1, k2 = WorkerKey("wc", 0), WorkerKey("wc", 1), WorkerKey("wc", 2)
    lines, split = E("lines", 0), E("split", 0)
    desired = {k0: WorkerSpec(k0, (lines,), 2), k1: WorkerSpec(k1, (E("count", 0), E("count", 1)), 2)}
    running = {k0: Running((lines,), False), k1: Running((E("count", 0, 1),), False), k2: Running((split,), False)}
    d = decide(desired, running, {}, set(), now=0.0)
    assert sorted(d.stop) == [k1, k2] and d.start == []  # k1's executors changed, k2 no longer wanted
    d = decide(desired, {k0: running[k0]}, {}, set(), now=0.0)
    assert [s.key for s in d.start] == [k1]  # k1 exited: start its new version
    assert decide(desired, {k0: running[k0]}, {k1: 5.0}, set(), now=4.0).start == []  # backing off
    assert decide(desired, {k0: running[k0]}, {}, {k1}, now=4.0).start == []  # given up
    assert decide(desired, {k1: Running((E("count", 0, 1),), True)}, {}, set(), now=0.0).stop == []  # already stopping
    same_tasks_other_split = {k1: Running((E("count", 0, 1),), False)}
    assert decide({k1: WorkerSpec(k1, (E("count", 0, 1),), 3)}, same_tasks_other_split, {}, set(), now=0.0).stop == []  # unchanged: keeps running


def test_crash_backoff_doubles_then_gives_up_within_the_window() -> None:
    h = CrashHistory(RestartPolicy(initial_s=1.0, max_s=4.0, give_up_after=4, window_s=100.0))
    assert [h.crashed(t) for t in (0.0, 1.0, 2.0)] == [1.0, 2.0, 4.0]
    assert h.crashed(3.0) is None and h.total == 4
    slow = CrashHistory(RestartPolicy(initial_s=1.0, max_s=4.0, give_up_after=2, window_s=10.0))
    assert [slow.crashed(t) for t in (0.0, 20.0, 40.0)] == [1.0, 1.0, 1.0]  # far apart: never gives up


def test_drain_waits_only_for_live_stopping_spouts_with_trees_in_flight() -> None:
    spout = {"kind": "spout", "final": False, "time": 100.0, "gauges": {"draining": 1, "pending": 2}}
    assert draining_elsewhere([spout], now=101.0)
    assert not draining_elsewhere([{**spout, "gauges": {"draining": 1, "pending": 0}}], now=101.0)
    assert not draining_elsewhere([{**spout, "gauges": {"draining": 0, "pending": 9}}], now=101.0)  # not stopping
    assert not draining_elsewhere([{**spout, "gauges": {"draining": 0, "active": 1, "pending": 9}}], now=101.0)
    # kill deactivates first: a deactivated spout's trees are waited for even before its SIGTERM shows
    assert draining_elsewhere([{**spout, "gauges": {"draining": 0, "active": 0, "pending": 9}}], now=101.0)
    assert not draining_elsewhere([{**spout, "gauges": {"draining": 0, "active": 0, "pending": 0}}], now=101.0)
    assert not draining_elsewhere([spout], now=120.0)  # stale: that executor is gone
    assert not draining_elsewhere([{**spout, "kind": "bolt"}], now=101.0)


def test_cli_arguments_are_checked_before_any_broker_is_needed() -> None:
    assert parse_conf(["topology.workers=3", "spark.executor.memory=2g"]) == {"topology.workers": 3, "spark.executor.memory": "2g"}
    with pytest.raises(UsageError, match=r"^-c topology.wrokers: unknown config key"):
        parse_conf(["topology.wrokers=3"])
    with pytest.raises(UsageError, match=r"expected key=value"):
        parse_conf(["topology.workers"])
    assert parse_executors(["count=4", "split=1"]) == {"count": 4, "split": 1}
    with pytest.raises(UsageError, match=r"^-e 'count=lots': expected COMPONENT=EXECUTORS"):
        parse_executors(["count=lots"])


def test_a_user_mistake_is_one_line_and_exit_2_with_a_traceback_only_when_verbose() -> None:
    runner = CliRunner()
    got = runner.invoke(app, ["submit", "/no/such/topology.py"])
    assert got.exit_code == 2 and got.output.strip() == "error: [/no/such/topology.py] topology file not found"
    got = runner.invoke(app, ["rebalance", "wc", "-e", "count"])
    assert got.exit_code == 2 and got.output.strip() == "error: -e 'count': expected COMPONENT=EXECUTORS"
    got = runner.invoke(app, ["--verbose", "submit", "/no/such/topology.py"])
    assert got.exit_code == 2 and "Traceback" in got.output and got.output.strip().endswith("topology file not found")


def test_serve_takes_its_data_dir_from_the_option_or_squall_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import service.supervisor.daemon as daemon

    started: list[Path] = []

    class Supervisor:
        def __init__(self, settings: Any, bootstrap: str, embedded: Any = None) -> None:
            started.append(settings.data_dir)
            self.id = "test"
            self.http = SimpleNamespace(host="127.0.0.1", port=0)

        def run(self) -> None:
            pass

        def stop(self) -> None:
            pass

    monkeypatch.setattr(daemon, "SupervisorService", Supervisor)
    runner = CliRunner()
    got = runner.invoke(app, ["serve", "--data-dir", str(tmp_path / "a"), "--bootstrap-servers", "127.0.0.1:1"])
    assert got.exit_code == 0, got.output
    got = runner.invoke(app, ["serve", "--bootstrap-servers", "127.0.0.1:1"], env={"SQUALL_DATA_DIR": str(tmp_path / "b")})
    assert got.exit_code == 0, got.output
    assert started == [tmp_path / "a", tmp_path / "b"]
    help_text = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "200"}).output
    assert "--data-dir" in help_text and "SQUALL_DATA_DIR" in help_text
