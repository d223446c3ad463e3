"""Task claims between supervisors (pure): a task never runs in two workers at once."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from service.control.claims import Claim, ClaimBook, task_refs
from service.control.scheduling import ExecutorAssignment
from service.control.slots import SlotTable


def started(pid: int, worker: int, tasks: list[tuple[str, int]], at: float, sup: str = "s1") -> dict[str, Any]:
    return {"event": "started", "topology": "wc", "worker": worker, "supervisor": sup, "pid": pid, "tasks": [list(t) for t in tasks], "at": at}


def ended(kind: str, pid: int, worker: int, sup: str = "s1") -> dict[str, Any]:
    return {"event": kind, "topology": "wc", "worker": worker, "supervisor": sup, "pid": pid, "at": 0.0}


def never(_: Claim) -> bool:
    return False


def test_a_claim_holds_while_starting_or_live_and_ends_at_its_exit() -> None:
    book = ClaimBook(startup_grace_s=10.0)
    book.apply(started(7, 0, [("count", 0), ("count", 1)], at=100.0))
    assert [c.pid for c in book.blocking("wc", {("count", 1)}, 105.0, never)] == [7]  # starting up
    assert book.blocking("wc", {("count", 1)}, 120.0, never) == []  # no live stats: died (its supervisor was killed)
    assert [c.pid for c in book.blocking("wc", {("count", 1)}, 120.0, lambda c: c.pid == 7)] == [7]  # live: still draining
    assert book.blocking("wc", {("count", 2)}, 105.0, lambda c: True) == []  # other tasks
    assert book.blocking("other", {("count", 1)}, 105.0, lambda c: True) == []  # other topology
    book.apply(ended("stopped", 7, 0))
    assert book.blocking("wc", {("count", 1)}, 105.0, lambda c: True) == []


def test_a_late_read_start_of_a_process_already_seen_to_exit_opens_nothing() -> None:
    book = ClaimBook()
    book.apply(ended("crashed", 9, 1))
    book.apply(started(9, 1, [("split", 0)], at=0.0))
    assert book.open == {}


@given(st.lists(st.tuples(st.integers(1, 6), st.booleans()), max_size=30))
def test_every_started_process_that_exited_releases_its_tasks_whatever_the_order(ops: list[tuple[int, bool]]) -> None:
    """Starts and exits applied in any order: what holds is exactly the started pids with no exit."""
    book = ClaimBook(startup_grace_s=1e9)
    starts: set[int] = set()
    exits: set[int] = set()
    for pid, is_start in ops:
        book.apply(started(pid, pid, [("count", 0)], at=0.0) if is_start else ended("stopped", pid, pid))
        (starts if is_start else exits).add(pid)
    holding = {c.pid for c in book.blocking("wc", {("count", 0)}, 1.0, never)}
    assert holding == starts - exits


def test_task_refs_name_component_and_task() -> None:
    assert task_refs([ExecutorAssignment("count", (2, 3)), ExecutorAssignment("__acker", (0,))]) == {("count", 2), ("count", 3), ("__acker", 0)}


def test_gained_slots_settle_before_their_workers_start_and_a_rebalance_starts_nothing() -> None:
    t = SlotTable(settle_s=2.0)
    t.assigned({1, 2}, now=0.0)
    assert t.startable(1.9) == set() and t.startable(2.0) == {1, 2}
    t.revoked()
    assert t.owned == {1, 2} and t.startable(3.0) == set()  # keep running, start nothing
    t.assigned({2, 3}, now=3.0)
    assert t.startable(4.0) == {2}  # kept slot 2 settled long ago; slot 3 was just gained
    assert t.startable(5.0) == {2, 3}
