"""Crash safety of the acker's changelog discipline, without a broker.

A simulated acker task processes a log of input records with the runtime's flush order
(results -> confirm -> changelog -> confirm -> commit up to ``commit_offset`` -> gc), with
and without young trees kept out of the changelog. It crashes at a random
point -- possibly half-way through writing the changelog -- restores a fresh ledger from
the changelog (last record per key wins), and replays the log from the committed
offset. Whatever the crash point: every tree gets an outcome, and only its true one
(acked if every edge was acked, failed if any tuple failed). A crash may re-deliver that
outcome (a duplicate completion, which the spout ignores and counts); never another.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from acker.durable import DurableLedger
from acker.ledger import Ledger
from streams.wire.acker import OP_ACK, OP_FAIL, OP_INIT
from tests.unit.acker.test_ledger_properties import build_tree


class Clock:
    t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def make_log(seed: int, trees: int) -> tuple[list[list[list[Any]]], list[int]]:
    rnd = random.Random(seed)
    ops: list[list[Any]] = []
    roots: list[int] = []
    for t in range(trees):
        o, r = build_tree(seed * 1000 + t, 1, rnd.randint(0, 6), 3)
        ops += o
        roots += r
    return shuffled_records(ops, rnd), roots


def shuffled_records(ops: list[list[Any]], rnd: random.Random) -> list[list[list[Any]]]:
    """Interleave the trees' ops as the network would, then cut them into records of 1-4 ops."""
    rnd.shuffle(ops)
    records = []
    i = 0
    while i < len(ops):
        n = rnd.randint(1, 4)
        records.append(ops[i : i + n])
        i += n
    return records


class Node:
    """One life of an acker task."""

    def __init__(self, changelog: dict[int, Any], clock: Clock, persist_after_s: float) -> None:
        self.dl = DurableLedger(Ledger(30, clock), persist_after_s)
        for root, value in changelog.items():
            self.dl.restore(root, value)
        self.results: list[tuple[int, bool]] = []


def run(
    records: list[list[list[Any]]], flush_every: int, crash_at: int, crash_phase: int, cut: float, persist_after_s: float = 0.0
) -> tuple[list[tuple[int, bool]], int]:
    """Deliver every outcome; the clock moves 0.1 s per input record."""
    import json

    clock = Clock()
    changelog: dict[int, Any] = {}  # the topic, compacted view
    committed = 0
    delivered: list[tuple[int, bool]] = []
    node = Node(changelog, clock, persist_after_s)
    pending_results: list[tuple[int, bool]] = []
    offset = 0
    crashed = False
    flushes = 0
    while offset < len(records):
        for out in node.dl.apply(offset, records[offset]):
            pending_results.append((out.root, out.acked))
        offset += 1
        clock.t += 0.1
        if offset % flush_every and offset < len(records):
            continue
        flushes += 1
        crash_now = not crashed and flushes == crash_at
        # 1. results, confirmed
        delivered += pending_results
        pending_results = []
        if crash_now and crash_phase == 0:
            crashed = True
        else:
            # 2. changelog (maybe only a prefix reaches the broker)
            recs = node.dl.changelog()
            if crash_now and crash_phase == 1:
                recs = recs[: int(len(recs) * cut)]
            for root, value in recs:
                changelog[root] = None if value is None else json.loads(value)
            if crash_now and crash_phase == 1:
                crashed = True
            elif crash_now and crash_phase == 2:
                crashed = True  # changelog written, offsets not committed
            else:
                committed = max(committed, node.dl.commit_offset(offset))
                for root, value in node.dl.gc(committed):
                    changelog[root] = value
                changelog = {r: v for r, v in changelog.items() if v is not None}
                continue
        # crash: restart from the changelog and the committed offset
        node = Node(changelog, clock, persist_after_s)
        pending_results = []
        offset = committed
    delivered += pending_results
    return delivered, flushes


def make_failing_log(seed: int, trees: int) -> tuple[list[list[list[Any]]], dict[int, bool]]:
    """Trees of init + acks + sometimes a fail, shuffled, with one tree's init, ack and fail
    forced into a single record (so they share one flush). Returns records and the truth
    ``root -> acked``."""
    rnd = random.Random(seed)
    ops: list[list[Any]] = []
    truth: dict[int, bool] = {}
    for t in range(trees):
        o, r = build_tree(seed * 1000 + t, 1, rnd.randint(0, 4), 3)
        root = r[0]
        if rnd.random() < 0.5:
            acks = [op for op in o if op[0] == OP_ACK]
            victim = rnd.choice(acks) if acks else None
            o = [op for op in o if op is not victim] + [[OP_FAIL, root]]
            truth[root] = False
        else:
            truth[root] = True
        ops += o
    records = shuffled_records(ops, rnd)
    # one record where a tree's fail, an ack and its init meet (fail first: before the init)
    root = rnd.getrandbits(64) or 1
    records.insert(rnd.randint(0, len(records)), [[OP_FAIL, root], [OP_ACK, root, 5], [OP_INIT, root, 9, 0]])
    truth[root] = False
    return records, truth


YOUNG = st.sampled_from([0.0, 0.25, 1.0, 100.0])
"""``persist_after_s``: every changed tree written at each flush, or trees kept out of the
changelog until they are 0.25 s, 1 s (the clock moves 0.1 s a record) or never that old."""


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 8), st.integers(1, 4), st.integers(1, 6), st.integers(0, 2), st.floats(0, 1), YOUNG)
def test_kill_at_any_point_gives_every_tree_its_one_true_outcome(
    seed: int, trees: int, flush_every: int, crash_at: int, phase: int, cut: float, persist_after_s: float
) -> None:
    records, truth = make_failing_log(seed, trees)
    delivered, _ = run(records, flush_every, crash_at, phase, cut, persist_after_s)
    outcomes: dict[int, set[bool]] = {}
    for root, ok in delivered:
        outcomes.setdefault(root, set()).add(ok)
    assert set(outcomes) == set(truth), "every tree gets an outcome"
    assert {r: v for r, v in outcomes.items() if v != {truth[r]}} == {}, "and only its true one"


def test_fail_ack_and_init_in_one_flush_survive_a_crash_after_the_changelog() -> None:
    # The reported loss: ack (persisted), then fail + init in one flush, crash after the
    # changelog write. The fail must be answered, once restored or at once.
    root = 77
    records = [[[OP_ACK, root, 5]], [[OP_FAIL, root], [OP_INIT, root, 9, 0]], [[OP_ACK, 1, 1]]]
    for crash_at in (1, 2, 3):
        for phase in (0, 1, 2):
            delivered, _ = run(records, 1, crash_at, phase, 0.5)
            assert (root, False) in delivered and (root, True) not in delivered, (crash_at, phase)


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 8), st.integers(1, 4), st.integers(1, 6), st.integers(0, 2), st.floats(0, 1), YOUNG)
def test_kill_at_any_point_loses_and_fails_no_tree(
    seed: int, trees: int, flush_every: int, crash_at: int, phase: int, cut: float, persist_after_s: float
) -> None:
    records, roots = make_log(seed, trees)
    delivered, _ = run(records, flush_every, crash_at, phase, cut, persist_after_s)
    acked = {r for r, ok in delivered if ok}
    failed = {r for r, ok in delivered if not ok}
    assert failed == set()
    assert acked == set(roots)


def test_a_crash_can_duplicate_a_completion_and_that_is_all() -> None:
    # Find a case where the crash re-delivers a completion: it is counted, not harmful.
    dups = 0
    for seed in range(200):
        records, roots = make_log(seed, 4)
        delivered, _ = run(records, 2, 2, 0, 1.0)
        assert {r for r, ok in delivered if ok} == set(roots)
        dups += len([r for r, ok in delivered if ok]) - len(set(roots))
    assert dups > 0


def test_trees_that_finish_young_never_reach_the_changelog() -> None:
    records, _ = make_log(7, 8)
    for persist_after_s, expect_writes in ((0.0, True), (100.0, False)):
        clock = Clock()
        dl = DurableLedger(Ledger(30, clock), persist_after_s)
        written = []
        for offset, record in enumerate(records):
            dl.apply(offset, record)
            clock.t += 0.1
            if offset % 2:
                written += dl.changelog()
        written += dl.changelog()
        assert len(dl) == 0 and dl.commit_offset(len(records)) == len(records)
        assert bool(written) == expect_writes, persist_after_s


def test_a_tree_that_grows_old_is_written_then_the_commit_passes_its_first_op() -> None:
    clock = Clock()
    dl = DurableLedger(Ledger(30, clock), persist_after_s=1.0)
    dl.apply(10, [[OP_INIT, 5, 3, 0]])  # root 5, first op at offset 10
    assert dl.changelog() == [] and dl.commit_offset(11) == 10
    dl.apply(11, [[OP_INIT, 6, 1, 0], [OP_ACK, 6, 1]])  # root 6 finishes young
    clock.t += 0.5
    assert dl.changelog() == [] and dl.commit_offset(12) == 10
    clock.t += 0.6  # root 5 is now 1.1 s old
    (rec,) = dl.changelog()
    assert rec[0] == 5 and dl.commit_offset(12) == 12
    assert dl.written == 1


def test_a_final_changelog_writes_every_live_tree() -> None:
    clock = Clock()
    dl = DurableLedger(Ledger(30, clock), persist_after_s=10.0)
    dl.apply(0, [[OP_INIT, 5, 3, 0], [OP_INIT, 6, 3, 0]])
    assert dl.changelog() == [] and dl.commit_offset(1) == 0
    assert sorted(r for r, _ in dl.changelog(final=True)) == [5, 6]
    assert dl.commit_offset(1) == 1
