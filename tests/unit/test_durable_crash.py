"""Crash safety of the acker's changelog discipline, without a broker.

A simulated acker task processes a log of input records with the runtime's flush order
(results -> confirm -> changelog -> confirm -> commit -> gc). It crashes at a random
point -- possibly half-way through writing the changelog -- restores a fresh ledger from
the changelog (last record per key wins), and replays the log from the committed
offset. Whatever the crash point: every tree is acked at least once and none is failed.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from acker.durable import DurableLedger
from acker.ledger import Ledger
from tests.unit.test_ledger_properties import build_tree


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
    # interleave trees but keep each op list shuffled as the network would
    rnd.shuffle(ops)
    records = []
    i = 0
    while i < len(ops):
        n = rnd.randint(1, 4)
        records.append(ops[i : i + n])
        i += n
    return records, roots


class Node:
    """One life of an acker task."""

    def __init__(self, changelog: dict[int, Any], clock: Clock) -> None:
        self.dl = DurableLedger(Ledger(30, clock))
        for root, value in changelog.items():
            self.dl.restore(root, value)
        self.results: list[tuple[int, bool]] = []


def run(records: list[list[list[Any]]], flush_every: int, crash_at: int, crash_phase: int, cut: float) -> tuple[list[tuple[int, bool]], int]:
    import json

    clock = Clock()
    changelog: dict[int, Any] = {}  # the topic, compacted view
    committed = 0
    delivered: list[tuple[int, bool]] = []
    node = Node(changelog, clock)
    pending_results: list[tuple[int, bool]] = []
    offset = 0
    crashed = False
    flushes = 0
    while offset < len(records):
        for out in node.dl.apply(offset, records[offset]):
            pending_results.append((out.root, out.acked))
        offset += 1
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
                committed = offset
                for root, value in node.dl.gc(committed):
                    changelog[root] = value
                changelog = {r: v for r, v in changelog.items() if v is not None}
                continue
        # crash: restart from the changelog and the committed offset
        node = Node(changelog, clock)
        pending_results = []
        offset = committed
    delivered += pending_results
    return delivered, flushes


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 2**32),
    st.integers(1, 8),
    st.integers(1, 4),
    st.integers(1, 6),
    st.integers(0, 2),
    st.floats(0, 1),
)
def test_kill_at_any_point_loses_and_fails_no_tree(seed: int, trees: int, flush_every: int, crash_at: int, phase: int, cut: float) -> None:
    records, roots = make_log(seed, trees)
    delivered, _ = run(records, flush_every, crash_at, phase, cut)
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
