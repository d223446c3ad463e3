"""A worker fences itself on a later claim of its tasks by another process, and only then (service.worker.claim_watch)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from service.control.claims import ClaimBook
from service.worker.claim_watch import ClaimWatch, Me
from streams.runtime.lease import WorkerLease

ME = Me("wc", "h1/42", 42, {("split", 0), ("split", 1), ("__acker", 0)})


def started(supervisor: str, pid: int, tasks: list[list[Any]], topology: str = "wc", worker: int = 1) -> dict[str, Any]:
    event = {"topology": topology, "event": "started", "supervisor": supervisor, "worker": worker, "pid": pid, "tasks": tasks, "at": 1.0}
    return {**event, "claim": f"{supervisor}/{pid}"}


def watch() -> ClaimWatch:
    w = ClaimWatch.__new__(ClaimWatch)  # the logic only: no consumer
    w.me, w.lease, w.seen_own = ME, WorkerLease(0.0), False
    return w


def test_a_later_claim_of_a_task_by_another_process_fences() -> None:
    w = watch()
    assert w.apply([started("h2", 7, [["split", 1]])]) is None  # before its own claim: an older claim it superseded
    assert w.apply([started("h1", 42, [["split", 0], ["split", 1]])]) is None
    assert w.apply([started("h1", 43, [["count", 0]]), started("h2", 7, [["split", 1]], topology="other")]) is None
    assert w.apply([{"topology": "wc", "event": "stopped", "supervisor": "h2", "worker": 1, "pid": 7}]) is None
    why = w.apply([started("h2", 8, [["__acker", 0], ["split", 1]], worker=3)])
    assert why == "__acker:0, split:1 claimed by w3 (pid 8) on h2"
    assert w.lease.state == "fenced" and not w.lease.held and w.lease.fenced_by == why


def test_the_same_supervisor_restarting_the_worker_elsewhere_fences_the_old_process() -> None:
    w = watch()
    w.apply([started("h1", 42, [["split", 0]])])
    assert w.apply([started("h1", 99, [["split", 0]])]) is not None


def test_an_old_record_with_the_same_pid_is_not_its_own_claim() -> None:
    w = watch()
    old = {**started("h1", 42, [["split", 0]]), "claim": "long-ago"}  # a recycled pid
    assert w.apply([old, started("h2", 7, [["split", 0]])]) is None  # both older than its own claim
    assert not w.seen_own


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["h1", "h2"]), st.sampled_from([42, 7]), st.sets(st.sampled_from(["split", "count"]))), max_size=12))
def test_fenced_exactly_when_a_foreign_overlapping_claim_follows_its_own(claims: list[tuple[str, int, set[str]]]) -> None:
    w = watch()
    events = [started(s, p, [[c, 0] for c in sorted(comps)]) for s, p, comps in claims]
    why = w.apply(events)
    own_seen = False
    expect = False
    for s, p, comps in claims:
        if (s, p) == ("h1", 42):
            own_seen = True
        elif own_seen and "split" in comps:
            expect = True
            break
    assert (why is not None) == expect == (w.lease.state == "fenced")


def test_a_fenced_worker_closes_its_claim_and_two_live_claims_are_contested() -> None:
    book = ClaimBook()
    book.apply(started("h1", 42, [["split", 0]]))
    book.apply(started("h2", 7, [["split", 0]]))
    assert list(book.contested(lambda c: True)) == [("wc", ("split", 0))]
    book.apply({"topology": "wc", "event": "fenced", "supervisor": "h1", "worker": 1, "pid": 42, "at": 2.0})
    assert book.contested(lambda c: True) == {}
    assert [c.pid for c in book.blocking("wc", {("split", 0)}, now=3.0, live=lambda c: True)] == [7]


def test_status_counts_a_task_contested_only_while_both_claimants_process() -> None:
    from service.query.status import contested_tasks

    events = [started("h1", 42, [["split", 0]], worker=2), started("h2", 7, [["split", 0]], worker=2)]

    def snap(pid: int, held: float) -> dict[str, Any]:
        return {"worker": "w2", "pid": pid, "gauges": {"lease_held": held}}

    assert contested_tasks("wc", events, [snap(42, 1.0), snap(7, 1.0)]) == ["split:0"]
    assert contested_tasks("wc", events, [snap(42, 0.0), snap(7, 1.0)]) == []  # the old one is held without a lease
    assert contested_tasks("wc", events, [snap(7, 1.0)]) == []
    assert contested_tasks("other", events, [snap(42, 1.0), snap(7, 1.0)]) == []
