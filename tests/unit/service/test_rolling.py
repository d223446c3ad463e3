"""``squall update``'s roll (service.control.rolling, the record's update transitions, reconcile's code check): pure, no broker."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.control.compat import compare
from service.control.record import (
    CodeVersion,
    RollingUpdate,
    Status,
    TopologyRecord,
    begin_update,
    rebalance,
    update_done,
    update_failed,
)
from service.control.rolling import keep_placement, placement_json, placement_of, roll_order, roll_progress, worker_code
from service.control.scheduling import ExecutorAssignment, plan_workers
from service.exceptions import ControlError
from service.supervisor.reconcile import Running, WorkerKey, WorkerSpec, decide, desired_workers
from streams.config import resolve
from tests.unit.service.test_compat import Shape, build
from tests.unit.test_schemas import check


def code(n: int, source: str = "") -> CodeVersion:
    return CodeVersion(name="wc", code=n, source=source or f"# version {n}", file_name="wc.py", conf={"topology.workers": 3})


def test_an_update_keeps_the_old_code_and_placement_for_the_old_workers_and_ends_in_a_note() -> None:
    rec = TopologyRecord.new("wc", "# version 1", "wc.py", {}, now=1.0)
    new = begin_update(rec, code(2), [[("lines", [0])]], False, "components added: audit", now=2.0)
    assert (new.code_version, new.source, new.conf, new.placement) == (2, "# version 2", {"topology.workers": 3}, [[("lines", [0])]])
    assert new.update == RollingUpdate(from_code=1, to_code=2, started_at=2.0, summary="components added: audit")
    assert new.version == rec.version + 1
    check("control.schema.json", new.encode())
    assert TopologyRecord.decode(new.encode()) == new
    with pytest.raises(ControlError, match=r"^\[wc\] an update to version 2 is under way"):
        begin_update(new, code(3), None, False, "", now=3.0)
    with pytest.raises(ControlError, match=r"^\[wc\] cannot rebalance: an update to version 2 is under way"):
        rebalance(new, 3.0, 2, {}, {"lines": 1})
    done = update_done(new, 2, now=4.0)
    assert done.update is None and done.last_update == "updated from version 1 to 2: components added: audit"
    assert update_done(new, 3, now=4.0) is new  # another update's end changes nothing
    check("control.schema.json", done.encode())
    with pytest.raises(jsonschema.ValidationError):
        check("control.schema.json", json.dumps({**json.loads(new.encode()), "update": {"from_code": 1}}).encode())


def test_a_failed_update_rolls_back_onto_the_old_code_once() -> None:
    rec = TopologyRecord.new("wc", "# version 1", "wc.py", {}, now=1.0)
    old = CodeVersion.of(rec)
    new = begin_update(rec, code(2), [[("lines", [0])]], False, "", now=2.0)
    back = update_failed(new, old, "worker w1 of version 2 exited with 1 at start-up: ImportError", now=3.0)
    assert (back.code_version, back.source, back.placement) == (1, "# version 1", None)
    assert back.update is not None and (back.update.from_code, back.update.to_code, back.update.rollback_of) == (2, 1, 2)
    assert back.update.from_placement == [[("lines", [0])]]  # the replaced workers are planned as they run
    assert update_failed(back, code(2), "again", now=4.0) is back  # a rollback is not rolled back
    done = update_done(back, 1, now=5.0)
    assert done.last_update == "update to version 2 failed and was rolled back to version 1: worker w1 of version 2 exited with 1 at start-up: ImportError"


def test_refusals_name_the_topology() -> None:
    rec = TopologyRecord.new("wc", "", "wc.py", {}, now=1.0)
    with pytest.raises(ControlError, match=r"^\[wc\] version 1 is the one running"):
        begin_update(rec, code(1), None, False, "", now=2.0)
    moving = rebalance(rec, 2.0, 2, {}, {"lines": 1})
    assert moving.status == Status.REBALANCING
    with pytest.raises(ControlError, match=r"^\[wc\] cannot update while it rebalances"):
        begin_update(moving, code(2), None, False, "", now=3.0)


def test_a_rebalance_deals_the_workers_again() -> None:
    rec = TopologyRecord.new("wc", "", "wc.py", {}, now=1.0).model_copy(update={"placement": [[("lines", [0])]]})
    assert rebalance(rec, 2.0, 2, {}, {"lines": 1}).placement is None


def test_worker_code_replaces_in_index_order_and_never_goes_back() -> None:
    roll = RollingUpdate(from_code=1, to_code=2, started_at=0.0)
    none_new = lambda j: False  # noqa: E731
    assert worker_code(None, 5, 3, 5, none_new) == 5
    assert [worker_code(roll, 2, i, 1, none_new) for i in range(3)] == [2, 1, 1]  # worker 0 goes first
    assert worker_code(roll, 2, 2, 2, none_new) == 2  # replaced: stays
    assert worker_code(roll, 2, 2, None, none_new) == 2  # not running (crashed, or its slot moved): starts on the new code
    assert worker_code(roll.model_copy(update={"drain_all": True}), 2, 2, 1, none_new) == 2  # drain-all: everything at once
    assert worker_code(roll, 2, 1, 7, none_new) == 2  # neither version: the new one


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 7).flatmap(lambda n: st.tuples(st.just(n), st.permutations(range(n)))), st.integers(0, 4), st.integers(1, 3))
def test_a_roll_has_at_most_one_worker_down_and_ends_with_every_worker_new(shape: tuple[int, list[int]], settle: int, start_ticks: int) -> None:
    """A cluster of ``n`` workers replaced in a given order, each supervisor deciding alone each tick: a replaced worker takes ``start_ticks`` to come up."""
    n, order = shape
    roll = RollingUpdate(from_code=1, to_code=2, started_at=0.0, order=list(order))
    replaced: list[int] = []
    code_of: dict[int, int | None] = dict.fromkeys(range(n), 1)
    up_since: dict[int, int] = dict.fromkeys(range(n), -100)
    down_until: dict[int, int] = {}
    for tick in range(n * (settle + start_ticks + 3) + 5):

        def on_new(j: int, tick: int = tick) -> bool:
            return code_of[j] == 2 and tick - up_since[j] >= settle

        for i in range(n):
            if code_of[i] is None:
                if tick >= down_until[i]:
                    code_of[i] = worker_code(roll, 2, i, None, on_new)
                    up_since[i] = tick
                continue
            want = worker_code(roll, 2, i, code_of[i], on_new)
            if want != code_of[i]:
                code_of[i] = None
                down_until[i] = tick + start_ticks
                replaced.append(i)
        assert sum(1 for c in code_of.values() if c is None) <= 1
    assert all(c == 2 for c in code_of.values())
    assert replaced == list(order)  # in the roll's order, each once


def workers(shape: Shape, n: int = 3) -> list[list[ExecutorAssignment]]:
    topology = build(shape)
    return plan_workers(topology, resolve({"topology.workers": n, "topology.acker.executors": 2}))


def test_keep_placement_keeps_every_executor_on_its_worker_and_deals_the_new_ones() -> None:
    old = workers(Shape())
    kept = keep_placement("wc", old, build(Shape(extra_bolt=True)))
    for i, w in enumerate(old):
        assert kept[i][: len(w)] == w  # everything stays where it ran
    added = [(i, e) for i, w in enumerate(kept) for e in w if e.component == "audit"]
    assert added == [(0, ExecutorAssignment("audit", (0,)))]
    removed = keep_placement("wc", old, build(Shape(drop_sink=True)))
    assert [e for w in removed for e in w if e.component == "sink"] == []
    assert {e for w in removed for e in w} == {e for w in old for e in w if e.component != "sink"}
    assert placement_of(placement_json(kept)) == kept


def test_keep_placement_fills_a_worker_left_empty_or_refuses() -> None:
    E = ExecutorAssignment
    old = [[E("lines", (0,)), E("lines", (1,)), E("split", (0,))], [E("sink", (0,))], [E("count", (0, 1)), E("count", (2, 3))]]
    topology = build(Shape(drop_sink=True, extra_bolt=True))
    kept = keep_placement("wc", old, topology)
    assert kept[1] == [ExecutorAssignment("audit", (0,))]  # the new bolt takes the worker the sink left
    with pytest.raises(ControlError, match=r"^\[wc\] worker w1 would have no executors left"):
        keep_placement("wc", old, build(Shape(drop_sink=True)))
    trailing = keep_placement("wc", [*old[:1], old[2], old[1]], build(Shape(drop_sink=True)))
    assert len(trailing) == 2  # a worker left empty at the end goes


def test_an_acker_count_change_is_refused_and_a_compatible_one_is_not() -> None:
    a = build(Shape())
    two, three = resolve({"topology.acker.executors": 2}), resolve({"topology.acker.executors": 3})
    assert compare(a, a, two, two).compatible
    assert str(compare(a, a, two, three).refusals[0]).startswith("[__acker] topology.acker.executors would change from 2 to 3")


def test_workers_that_lose_a_component_go_last_and_those_that_gain_one_first() -> None:
    old = workers(Shape(extra_bolt=True), n=4)
    new = keep_placement("wc", old, build(Shape(side=True)))
    loses = next(i for i, w in enumerate(old) if any(e.component == "audit" for e in w))
    assert roll_order(old, new, [], ["audit"])[-1] == loses
    gained = keep_placement("wc", workers(Shape(), n=4), build(Shape(extra_bolt=True)))
    gains = next(i for i, w in enumerate(gained) if any(e.component == "audit" for e in w))
    assert roll_order(workers(Shape(), n=4), gained, ["audit"], [])[0] == gains


def test_roll_progress_line() -> None:
    assert roll_progress(2, {0: 3, 1: 3}, 3) == "2 of 2 workers on version 3: w0 v3, w1 v3"


def test_reconcile_restarts_a_worker_whose_code_changes_and_plans_each_worker_from_its_code() -> None:
    k0 = WorkerKey("wc", 0)
    lines = ExecutorAssignment("lines", (0,))
    running = {k0: Running((lines,), False, 1)}
    assert decide({k0: WorkerSpec(k0, (lines,), 3, 1)}, running, {}, set(), now=0.0).stop == []
    assert decide({k0: WorkerSpec(k0, (lines,), 3, 2)}, running, {}, set(), now=0.0).stop == [k0]
    rec = TopologyRecord.new("wc", "", "wc.py", {}, now=1.0)
    old_plan = [[lines], [ExecutorAssignment("sink", (0,))]]
    new_plan = [[lines, ExecutorAssignment("audit", (0,))]]
    want = desired_workers([rec], {"wc": {1: old_plan, 2: new_plan}}, set(range(32)), 0.0, lambda r, i: 2 if i == 0 else 1)
    assert want[k0].code == 2 and want[k0].components == ["lines", "audit"]
    assert want[WorkerKey("wc", 1)].code == 1 and want[WorkerKey("wc", 1)].components == ["sink"]
    assert WorkerKey("wc", 1) not in desired_workers([rec], {"wc": {1: old_plan, 2: new_plan}}, set(range(32)), 0.0, lambda r, i: 2)


def test_update_usage_mistakes_are_one_line_and_exit_2_before_any_broker() -> None:
    from typer.testing import CliRunner

    from service.cli.main import app

    runner = CliRunner()
    got = runner.invoke(app, ["update", "wc"])
    assert got.exit_code == 2 and got.output.strip() == "error: [wc] give either a topology FILE or --to-version N"
    got = runner.invoke(app, ["update", "wc", "wc.py", "--to-version", "1"])
    assert got.exit_code == 2 and got.output.strip() == "error: [wc] give either a topology FILE or --to-version N"
    got = runner.invoke(app, ["update", "wc", "--to-version", "1", "-c", "topology.workers=2"])
    assert got.exit_code == 2 and "--to-version runs a stored version as it was" in got.output


def test_a_drain_all_update_waits_for_every_claim_of_the_other_code() -> None:
    from service.control.claims import ClaimBook

    book = ClaimBook(startup_grace_s=5.0)
    book.apply({"event": "started", "topology": "wc", "worker": 0, "supervisor": "s1", "pid": 7, "code": 1, "tasks": [["count", 0]], "at": 100.0})
    book.apply({"event": "started", "topology": "wc", "worker": 1, "supervisor": "s2", "pid": 8, "code": 2, "tasks": [["split", 0]], "at": 100.0})
    book.apply({"event": "started", "topology": "other", "worker": 0, "supervisor": "s1", "pid": 9, "tasks": [["x", 0]], "at": 100.0})
    assert [c.pid for c in book.other_code("wc", 2, now=101.0, live=lambda c: False)] == [7]  # within its start-up grace
    assert [c.pid for c in book.other_code("wc", 2, now=200.0, live=lambda c: c.pid == 7)] == [7]  # still publishing stats
    assert book.other_code("wc", 2, now=200.0, live=lambda c: False) == []  # gone without a word (its supervisor was killed)
    book.apply({"event": "stopped", "topology": "wc", "worker": 0, "supervisor": "s1", "pid": 7, "at": 150.0})
    assert book.other_code("wc", 2, now=151.0, live=lambda c: True) == []
    assert [c.code for c in book.of_worker("wc", 1)] == [2] and book.of_worker("other", 0)[0].code == 1  # events before updates: code 1
