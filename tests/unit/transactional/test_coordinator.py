"""The batch coordinator (Storm's MasterBatchCoordinator), driven through random acks, fails
and restarts: commits only in txid order, every offset committed exactly once, replays of a
transactional txid identical, attempts always growing."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.transactional.batch_tracker import BatchTracker
from streams.transactional.coordinator import BatchCoordinator, CoordinatorState, Phase, Range
from streams.wire.naming import TP

HIGHS = {("t", 0): 37, ("t", 1): 23, ("u", 0): 0}


def simulate(seed: int, opaque: bool, max_pending: int, records: int, steps: int = 400) -> None:
    rng = random.Random(seed)

    def hook(txid: int, attempt: int, proposed: dict[TP, Range]) -> dict[TP, Range]:
        # an opaque source that sometimes returns less (a partition unavailable, a short read)
        out = {tp: (a, a + max(1, (b - a) // 2)) if rng.random() < 0.3 else (a, b) for tp, (a, b) in proposed.items()}
        if len(out) > 1 and rng.random() < 0.3:
            out.pop(sorted(out)[0])
        return out

    def new(state: CoordinatorState) -> BatchCoordinator:
        return BatchCoordinator(state, opaque, max_pending, records, hook if opaque else None)

    persisted = json.dumps(CoordinatorState().to_json())
    c = new(CoordinatorState())
    processing: set[tuple[int, int]] = set()
    committing: set[tuple[int, int]] = set()
    emissions: dict[int, list[tuple[int, dict[TP, Range]]]] = {}
    frozen: dict[int, dict[TP, Range]] = {}
    committed: list[tuple[int, dict[TP, Range]]] = []
    faults = True
    for step in range(steps * 3):
        if step == steps:
            faults = False  # then run to completion without faults
        action = c.next_action(HIGHS, starts={})
        if action is not None:
            b = action.batch
            persisted = json.dumps(c.snapshot())
            if action.kind == "emit":
                prior = emissions.setdefault(b.txid, [])
                assert not prior or b.attempt > prior[-1][0], "attempts only grow, across restarts too"
                if prior and not opaque:
                    assert b.ranges == prior[0][1], "a transactional replay re-reads the same ranges"
                if b.txid in frozen:
                    assert b.ranges == frozen[b.txid], "a batch whose commit started never changes"
                prior.append((b.attempt, dict(b.ranges)))
                c.emitted(b)
                processing.add((b.txid, b.attempt))
            else:
                c.commit_started(b)
                frozen[b.txid] = dict(b.ranges)
                persisted = json.dumps(c.snapshot())
                committing.add((b.txid, b.attempt))
            assert len(c.in_flight()) <= max_pending
            continue
        r = rng.random()
        if faults and r < 0.05:  # the spout's worker dies: every tree in flight is lost
            c = new(CoordinatorState.from_json(json.loads(persisted)))
            processing.clear()
            committing.clear()
        elif processing and r < 0.6:
            key = rng.choice(sorted(processing))
            processing.discard(key)
            (c.batch_failed if faults and rng.random() < 0.3 else c.batch_acked)(*key)
        elif committing:
            key = committing.pop()
            if faults and rng.random() < 0.3:
                c.commit_failed(*key)
            else:
                done = c.commit_acked(*key)
                if done is not None:
                    persisted = json.dumps(c.snapshot())
                    committed.append((done.txid, dict(done.ranges)))
        elif not processing and not committing and all(b.phase == Phase.PROCESSED for b in c.in_flight()) and not c.in_flight():
            break
    assert [t for t, _ in committed] == list(range(1, len(committed) + 1)), "commits in strict txid order"
    cursor = {tp: 0 for tp in HIGHS}
    for _, ranges in committed:
        for tp, (lo, hi) in ranges.items():
            assert lo == cursor[tp] and hi > lo, f"{tp}: committed ranges are contiguous and never overlap"
            cursor[tp] = hi
    assert cursor == HIGHS, "every offset was committed exactly once"


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.booleans(), st.integers(1, 4), st.integers(1, 9))
def test_random_faults_never_break_txid_order_or_exactly_once_coverage(seed: int, opaque: bool, max_pending: int, records: int) -> None:
    simulate(seed, opaque, max_pending, records)


def test_a_failed_batch_replays_every_later_batch_in_flight() -> None:
    for opaque in (False, True):
        c = BatchCoordinator(CoordinatorState(), opaque, max_pending=3, batch_records=5)
        batches = []
        for _ in range(3):
            a = c.next_action({("t", 0): 100}, {})
            assert a is not None
            c.emitted(a.batch)
            batches.append((a.batch.txid, a.batch.attempt))
        c.batch_acked(*batches[0])
        c.batch_failed(*batches[1])  # txid 2 fails while 3 is in flight
        again = []
        while (a := c.next_action({("t", 0): 100}, {})) is not None:
            if a.kind == "commit":
                c.commit_started(a.batch)  # batch 1 commits meanwhile
                continue
            c.emitted(a.batch)
            again.append((a.batch.txid, a.batch.attempt))
        assert again == [(2, 2), (3, 2)]
        assert c.counters.replayed == 2


def test_tracker_completes_in_any_order_and_drops_stale_attempts() -> None:
    t = BatchTracker(frozenset({10, 11}), committer=True)
    b = t.marker(1, 1, source_task=11, count=2, tuple="m11")  # the marker before its tuples
    assert b is not None and not t.complete(b)
    t.data(1, 1, source_task=11)
    t.marker(1, 1, source_task=10, count=0, tuple="m10")
    assert not t.complete(b)  # one tuple of 11 still missing
    t.data(1, 1, source_task=11)
    assert t.complete(b)
    b.input_done = True
    assert not t.ready(b)  # a committer waits for its commit
    assert t.commit(1, 1, "c") is b and t.ready(b)
    newer = t.data(2, 2, source_task=10)
    assert newer is not None and t.data(2, 1, source_task=10) is None  # an older attempt is stale
    t.finished(b)
    assert t.commit(1, 1, "c again") is None and t.is_duplicate_commit(1, 1)
    assert t.commit(3, 1, "unknown") is None and not t.is_duplicate_commit(3, 1)  # lost: the caller fails it
    t.data(2, 3, source_task=10)
    assert [s.attempt for s in t.superseded] == [2]  # the replay supersedes what was held


def test_a_tuple_resent_by_a_restarted_upstream_task_after_the_input_was_complete_is_dropped() -> None:
    """An upstream task finished its part (tuples + marker), restarted before committing its
    input offsets, and sent the batch's tuples and marker again: a committer that already
    has the whole input (and waits for its commit) must not count them twice."""
    t = BatchTracker(frozenset({10}), committer=True)
    t.data(4, 1, source_task=10)
    b = t.marker(4, 1, source_task=10, count=1, tuple="m")
    assert b is not None and t.complete(b)
    b.input_done = True
    assert t.data(4, 1, source_task=10) is None  # the resent tuple: dropped, not executed
    assert t.marker(4, 1, source_task=10, count=1, tuple="m again") is None
    assert b.received == {10: 1} and b.markers == ["m"]


def test_an_upstream_task_that_restarts_mid_batch_breaks_the_batch_here() -> None:
    """Some of the batch came from the upstream task's first life, the rest from its second
    (which re-sent what the first had sent): counting cannot be trusted, so the batch fails."""
    t = BatchTracker(frozenset({10}), committer=False)
    b = t.data(5, 1, source_task=10, epoch=111)
    assert b is not None and not b.broken
    assert t.data(5, 1, source_task=10, epoch=222) is b and b.broken  # the second life
    assert b.received == {10: 1}  # its tuples were not counted
    fresh = t.data(5, 2, source_task=10, epoch=222)  # the replay, a new attempt: clean
    assert fresh is not None and not fresh.broken and t.superseded == [b]


@given(
    st.integers(min_value=1, max_value=50),
    st.lists(st.tuples(st.integers(min_value=0, max_value=120), st.integers(min_value=0, max_value=120)), min_size=1, max_size=20),
)
def test_a_batch_takes_what_has_arrived_up_to_the_cap(cap: int, arrivals: list[tuple[int, int]]) -> None:
    """``squall.batch.records`` is a cap, not a size: below it a batch takes every record that has arrived, so batches
    grow only while the input outruns the commits (the default cap, 5,000, binds only at full speed)."""
    c = BatchCoordinator(CoordinatorState(), opaque=False, max_pending=1, batch_records=cap)
    tps: list[TP] = [("t", 0), ("t", 1)]
    highs = dict.fromkeys(tps, 0)
    cursor = dict.fromkeys(tps, 0)
    for more in arrivals:  # records arrive, then the spout asks for its next action (one batch in flight at most)
        for tp, n in zip(tps, more, strict=True):
            highs[tp] += n
        a = c.next_action(dict(highs), starts=dict.fromkeys(tps, 0))
        if all(highs[tp] == cursor[tp] for tp in tps):
            assert a is None  # nothing new: no empty batch
            continue
        assert a is not None and a.kind == "emit"
        want = {tp: (cursor[tp], min(highs[tp], cursor[tp] + cap)) for tp in tps if highs[tp] > cursor[tp]}
        assert a.batch.ranges == want
        for tp, (_, end) in want.items():
            cursor[tp] = end
        c.emitted(a.batch)
        c.batch_acked(a.batch.txid, a.batch.attempt)
        commit = c.next_action(dict(highs), starts={})
        assert commit is not None and commit.kind == "commit" and commit.batch.txid == a.batch.txid
        c.commit_started(commit.batch)
        assert c.commit_acked(commit.batch.txid, commit.batch.attempt) is not None


def test_a_drain_commits_what_was_processed_and_starts_nothing() -> None:
    """A worker's SIGTERM drain (``wind_down``): batches in flight finish and commit, in txid order; no new batch is cut; a failed one ends it."""
    c = BatchCoordinator(CoordinatorState(), opaque=False, max_pending=3, batch_records=5)
    emitted = []
    for _ in range(3):
        a = c.next_action({("t", 0): 100}, {})
        assert a is not None
        c.emitted(a.batch)
        emitted.append(a.batch)
    assert c.settling() and c.next_commit() is None  # all three processing
    c.batch_acked(emitted[1].txid, emitted[1].attempt)
    assert c.next_commit() is None  # txid 2 waits for txid 1
    c.batch_acked(emitted[0].txid, emitted[0].attempt)
    first = c.next_commit()
    assert first is not None and first.batch.txid == 1
    c.commit_started(first.batch)
    c.commit_acked(1, first.batch.attempt)
    second = c.next_commit()
    assert second is not None and second.batch.txid == 2
    c.commit_started(second.batch)
    c.commit_acked(2, second.batch.attempt)
    c.batch_failed(emitted[2].txid, emitted[2].attempt)  # txid 3 fails: it would need a new emit
    assert c.next_commit() is None and not c.settling()  # the drain is over; txid 3 replays in the next life
    assert c.state.committed == 2 and len(c.state.batches) == 1  # nothing new was cut
