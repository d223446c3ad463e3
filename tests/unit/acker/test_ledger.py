"""Acker ledger: Storm's XOR algebra, orderings, fails and timeouts on an injected clock."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acker.ledger import Ledger, Reason


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_seed_example_spout_0100_bolt1_0010_bolt2(clock: Clock) -> None:
    # The classic example of Storm's acker docs: spout emits id 0100 to Bolt1; Bolt1 emits 0010 and acks
    # 0100 ^ 0010; Bolt2 acks 0010; the acker reaches 0 and tells the spout.
    ledger = Ledger(30, clock)
    root = 7
    assert ledger.init(root, 0b0100, spout_task=3) is None
    clock.t += 0.25
    assert ledger.ack(root, 0b0100 ^ 0b0010) is None
    tree = ledger.get(root)
    assert tree is not None
    assert (tree.root, tree.ack_val, tree.spout_task, tree.start, tree.tag, tree.failed) == (root, 0b0010, 3, 1000.0, -1, False)
    out = ledger.ack(root, 0b0010)
    assert out is not None
    assert out.acked and out.reason == Reason.COMPLETE and out.spout_task == 3
    assert out.latency_s == pytest.approx(0.25)
    assert root not in ledger and len(ledger) == 0


def test_ack_before_init_waits_for_the_spout_task(clock: Clock) -> None:
    ledger = Ledger(30, clock)
    assert ledger.ack(1, 0b0100 ^ 0b0010) is None
    assert ledger.ack(1, 0b0010) is None  # value is now 0b0100, task unknown
    out = ledger.init(1, 0b0100, spout_task=0)
    assert out is not None and out.acked and out.spout_task == 0


def test_zero_value_without_task_does_not_complete(clock: Clock) -> None:
    ledger = Ledger(30, clock)
    assert ledger.ack(5, 9) is None
    assert ledger.ack(5, 9) is None  # XOR back to 0, but no init yet
    assert 5 in ledger
    out = ledger.init(5, 0, spout_task=1)  # a spout tuple with no targets would send 0
    assert out is not None and out.acked


def test_explicit_fail_fails_and_removes(clock: Clock) -> None:
    ledger = Ledger(30, clock)
    ledger.init(2, 0b1, spout_task=4)
    out = ledger.fail(2)
    assert out is not None and not out.acked and out.reason == Reason.FAILED and out.spout_task == 4
    assert 2 not in ledger


def test_fail_before_init_fails_the_tree_at_init(clock: Clock) -> None:
    ledger = Ledger(30, clock)
    assert ledger.fail(8) is None
    out = ledger.init(8, 0b11, spout_task=2)
    assert out is not None and not out.acked and out.spout_task == 2


def test_timeout_with_injected_clock(clock: Clock) -> None:
    ledger = Ledger(30, clock, buckets=3)  # rotates every 15 s; expiry within [30, 45) s
    ledger.init(1, 0b1, spout_task=0)
    clock.t += 29.9
    assert ledger.tick() == []
    assert 1 in ledger
    clock.t += 15.2
    expired = ledger.tick()
    assert [(o.root, o.reason, o.acked, o.spout_task) for o in expired] == [(1, Reason.TIMEOUT, False, 0)]
    assert 1 not in ledger


def test_ack_after_expiry_yields_fail_never_ack(clock: Clock) -> None:
    ledger = Ledger(10, clock, buckets=2)
    ledger.init(1, 0b1, spout_task=0)
    clock.t += 20.1
    assert [o.reason for o in ledger.tick()] == [Reason.TIMEOUT]
    out = ledger.ack(1, 0b1)  # would have completed the tree
    assert out is not None and not out.acked and out.reason == Reason.LATE
    assert 1 not in ledger


def test_reset_timeout_restarts_the_clock(clock: Clock) -> None:
    ledger = Ledger(10, clock, buckets=2)
    ledger.init(1, 0b1, spout_task=0)
    clock.t += 9
    ledger.tick()
    ledger.reset_timeout(1)
    clock.t += 9
    assert ledger.tick() == []
    assert 1 in ledger


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        Ledger(0)
    with pytest.raises(ValueError):
        Ledger(10, buckets=1)


def test_fail_after_an_ack_but_before_the_init_fails_the_tree_at_the_init(clock: Clock) -> None:
    # Storm's Acker answers a failed tree as soon as its spout task is known; before the
    # fix this tree was dropped at the fail and its init waited for the timeout.
    ledger = Ledger(30, clock)
    assert ledger.ack(8, 0b01) is None
    assert ledger.fail(8) is None
    assert ledger.get(8) is not None and ledger.get(8).failed  # type: ignore[union-attr]
    clock.t += 0.2
    out = ledger.init(8, 0b01, spout_task=2)  # would have completed the tree
    assert out is not None and out.reason == Reason.FAILED and not out.acked and out.spout_task == 2
    assert 8 not in ledger


def test_a_failed_tree_with_no_init_times_out_with_nobody_to_tell(clock: Clock) -> None:
    ledger = Ledger(10, clock, buckets=2)
    ledger.fail(9)
    clock.t += 20.1
    assert [(o.root, o.reason, o.spout_task) for o in ledger.tick()] == [(9, Reason.TIMEOUT, None)]


@pytest.mark.parametrize("age", [0.0, 5.0, 14.9, 15.0, 25.0, 29.9, 30.0, 44.0, 100.0])
def test_a_restored_tree_times_out_at_its_start_plus_the_timeout_not_later(clock: Clock, age: float) -> None:
    # Before the fix a restored tree went to the newest bucket: it timed out 30-45 s after
    # the *restore*, whatever its age. Now: within one period after start + timeout.
    timeout, period = 30.0, 15.0  # 3 buckets
    restored_at = clock.t
    ledger = Ledger(timeout, clock, buckets=3)
    start = restored_at - age
    ledger.restore(1, 0b1, 0, start, tag=-1)
    expired_at = None
    while expired_at is None and clock.t < restored_at + 100:
        clock.t += 0.1
        if ledger.tick():
            expired_at = clock.t
    assert expired_at is not None
    deadline = start + timeout
    if age < timeout:
        assert deadline - 1e-6 <= expired_at <= deadline + period + 0.1
    else:  # overdue at the restore: the first rotation takes it
        assert expired_at <= restored_at + period + 0.1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["init", "ack", "fail", "reset", "tick", "persist"]), st.integers(1, 6), st.integers(0, 7)), max_size=60))
def test_peek_agrees_with_get_after_any_ops(ops: list[tuple[str, int, int]]) -> None:
    """``peek`` (the changelog's cheap look) says what ``get`` says: present or not, the
    start time and the persisted flag, whatever ops, rotations and persists came before."""
    clock = Clock()
    ledger = Ledger(timeout_s=4.0, clock=clock)
    for kind, root, val in ops:
        clock.t += 0.5
        if kind == "init":
            ledger.init(root, val, spout_task=1)
        elif kind == "ack":
            ledger.ack(root, val)
        elif kind == "fail":
            ledger.fail(root)
        elif kind == "reset":
            ledger.reset_timeout(root)
        elif kind == "tick":
            ledger.tick()
        else:
            ledger.mark_persisted(root)
        for r in range(1, 7):
            entry = ledger.get(r)
            assert ledger.peek(r) == (None if entry is None else (entry.start, entry.persisted))
