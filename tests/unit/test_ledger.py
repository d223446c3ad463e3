"""Acker ledger: Storm's XOR algebra, orderings, fails and timeouts on an injected clock."""

from __future__ import annotations

import pytest

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
    assert ledger.get(root) == (0b0010, 3, 1000.0, -1)
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
