"""Silent workers and unreachable supervisors, as any host's ``squall status`` sees them (service.query.reachability)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from service.control.claims import ClaimBook
from service.query.reachability import silent_workers, unreachable_supervisors
from service.query.views import status_lines
from tests.unit.service.status_dicts import bare_status


def started(sup: str, pid: int, worker: int, at: float = 0.0, topology: str = "wc") -> dict[str, Any]:
    return {"event": "started", "topology": topology, "supervisor": sup, "pid": pid, "worker": worker, "tasks": [["count", worker]], "at": at}


def snap(worker: int, pid: int, at: float, final: bool = False) -> dict[str, Any]:
    return {"worker": f"w{worker}", "pid": pid, "time": at, "final": final, "component": "count"}


@given(st.floats(0.0, 30.0), st.floats(20.0, 60.0))
def test_a_worker_is_silent_exactly_when_its_newest_snapshot_is_older_than_its_claim_lives(last: float, now: float) -> None:
    got = silent_workers("wc", ClaimBook.of([started("h1", 7, 2)]), [snap(2, 7, last - 3.0), snap(2, 7, last)], now)
    if now - last > 5.0:
        assert got == [{"worker": "w2", "supervisor": "h1", "pid": 7, "silent_s": round(now - last, 1)}]
    else:
        assert got == []


def test_starting_stopping_exited_and_other_topologies_workers_are_not_silent() -> None:
    events = [started("h1", 1, 0), started("h1", 2, 1, at=95.0), started("h1", 3, 2), started("h1", 4, 3), started("h1", 5, 0, topology="other")]
    events.append({"event": "stopped", "topology": "wc", "supervisor": "h1", "pid": 4, "worker": 3, "at": 50.0})
    snaps = [snap(2, 3, 40.0, final=True)]  # pid 1 never published; pid 2 starts (grace); pid 3 said its final snapshot
    assert [w["pid"] for w in silent_workers("wc", ClaimBook.of(events), snaps, now=100.0)] == [1]
    assert silent_workers("wc", ClaimBook.of(events), [*snaps, snap(0, 1, 99.0)], now=100.0) == []


def test_a_supervisor_is_unreachable_only_when_every_worker_of_the_topology_it_runs_is_silent() -> None:
    events = [started("h1", 1, 0), started("h1", 2, 1), started("h2", 3, 2), started("h2", 4, 3)]
    snaps = [snap(0, 1, 90.0), snap(1, 2, 92.0), snap(2, 3, 91.0), snap(3, 4, 99.5)]  # h1 silent; h2 half
    silent = silent_workers("wc", ClaimBook.of(events), snaps, now=100.0)
    assert [(w["supervisor"], w["worker"]) for w in silent] == [("h1", "w0"), ("h2", "w2"), ("h1", "w1")]  # oldest silence first
    assert unreachable_supervisors("wc", silent, ClaimBook.of(events)) == [{"supervisor": "h1", "workers": ["w0", "w1"], "silent_s": 8.0}]


def test_status_says_which_supervisor_is_unreachable_which_workers_are_silent_and_what_paused() -> None:
    st = bare_status(
        workers=4,
        silent_workers=[
            {"worker": "w1", "supervisor": "h2", "pid": 7, "silent_s": 9.2},
            {"worker": "w3", "supervisor": "h2", "pid": 9, "silent_s": 8.9},
            {"worker": "w0", "supervisor": "h1", "pid": 5, "silent_s": 6.1},
        ],
        unreachable=[{"supervisor": "h2", "workers": ["w1", "w3"], "silent_s": 8.9}],
        lease_pauses=2,
        lease_paused_s=0.3,
        lease_paused_workers=["w2"],
    )
    lines = status_lines(st)
    assert any(line.startswith("supervisor h2 unreachable: its workers w1, w3 published no stats for 9 s (cut off from the broker") for line in lines), lines
    assert "worker w0 on h1 (pid 5) published no stats for 6 s: its lease lapsed, paused" in lines  # h1 still reaches the broker otherwise
    assert not any("worker w1 on h2" in line for line in lines)  # said once, with its supervisor
    assert any(line.startswith("executors of w2 paused 2 times, 0.3 s in all: the broker confirmed none of") for line in lines), lines
