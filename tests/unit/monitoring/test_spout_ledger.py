"""Spout task ledgers (issue 15): every re-emission is a replay, by cause, across lives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.exceptions import DecodeError
from streams.kafka.source import KafkaMessageId
from streams.monitoring.ledger_store import parse_ledger
from streams.monitoring.spout_ledger import TaskLedger

M = KafkaMessageId


class Life:
    """One life of a spout task reading partition ("t", 0) the way KafkaSpout does: from the
    committed offset, in order; failed records are emitted again before new ones."""

    def __init__(self, ledger: TaskLedger, committed: int) -> None:
        self.ledger = ledger
        self.next = committed
        self.inflight: list[int] = []
        self.retry: list[int] = []
        self.emits = 0
        self.acked: set[int] = set()

    def emit(self) -> int:
        off = self.retry.pop(0) if self.retry else self.next
        if off == self.next:
            self.next += 1
        self.inflight.append(off)
        self.ledger.emitted_tracked(M("t", 0, off))
        self.emits += 1
        self.ledger.set_emitted(self.emits)
        return off

    def outcome(self, pick: int, how: str) -> None:
        if not self.inflight:
            return
        off = self.inflight.pop(pick % len(self.inflight))
        if how == "ack":
            self.ledger.acked_tree()
            self.acked.add(off)
        else:
            self.ledger.failed_tree(M("t", 0, off), how)
            self.retry.append(off)


def committed_after(acked: set[int], start: int) -> int:
    off = start
    while off in acked:
        off += 1
    return off


steps = st.lists(
    st.one_of(
        st.just(("emit",)),
        st.tuples(st.just("outcome"), st.integers(0, 50), st.sampled_from(["ack", "ack", "fail", "timeout"])),
        st.just(("flush",)),
        st.just(("commit",)),
        st.just(("crash",)),
    ),
    max_size=120,
)


@settings(max_examples=500, deadline=None)
@given(steps)
def test_every_reemission_is_counted_and_the_ledger_balances(ops: list[tuple[Any, ...]]) -> None:
    """Over any sequence of emits, outcomes, flushes (ledger written), commits and kill -9s
    (a new life from the last written ledger and the committed offset):

    * the durable ledger balances: emitted == first emits + replayed, where first emits is
      the number of distinct offsets ever emitted (they are emitted in order);
    * with no crash, the replays it counts are exactly the re-emissions;
    * every crash hides at most the emits since the last flush.
    """
    written = TaskLedger("lines", 0).to_json()
    committed = 0
    life = Life(TaskLedger("lines", 0), committed)
    true_emits, true_first = 0, set()
    hidden_allowance = 0
    crashed = False
    since_flush = 0
    for op in ops:
        if op[0] == "emit":
            off = life.emit()
            true_emits += 1
            true_first.add(off)
            since_flush += 1
        elif op[0] == "outcome":
            life.outcome(op[1], op[2])
        elif op[0] == "flush":
            written = life.ledger.to_json()
            life.ledger.written = life.ledger.seq
            since_flush = 0
        elif op[0] == "commit":  # the executor writes the ledgers, then commits
            written = life.ledger.to_json()
            life.ledger.written = life.ledger.seq
            since_flush = 0
            committed = committed_after(life.acked | set(range(committed)), committed)
        else:  # kill -9: what was not written is gone; the new life re-reads from the commit
            crashed = True
            hidden_allowance += since_flush
            since_flush = 0
            life = Life(TaskLedger.from_json(written).next_life(), committed)
            life.acked = set(range(committed))
    durable = TaskLedger.from_json(life.ledger.to_json())
    first_emits = sum(durable.high.values())
    assert durable.emitted == first_emits + sum(durable.replayed.values())
    true_replays = true_emits - len(true_first)
    if not crashed:
        assert sum(durable.replayed.values()) == true_replays
        assert durable.replayed["restart"] == 0
    else:
        assert true_emits - hidden_allowance <= durable.emitted <= true_emits
        assert true_replays - hidden_allowance <= sum(durable.replayed.values()) <= true_replays


def test_causes_are_kept_apart() -> None:
    led = TaskLedger("lines", 3)
    for off in range(4):
        led.emitted_tracked(M("t", 0, off))
    led.failed_tree(M("t", 0, 1), "fail")
    led.failed_tree(M("t", 0, 2), "timeout")
    led.emitted_tracked(M("t", 0, 2))
    led.emitted_tracked(M("t", 0, 1))
    nxt = led.next_life()
    nxt.emitted_tracked(M("t", 0, 3))  # emitted by the previous life: a restart replay
    nxt.emitted_tracked(M("t", 0, 4))  # new
    assert nxt.replayed == {"fail": 1, "timeout": 1, "restart": 1}
    assert (nxt.failed, nxt.timeouts, nxt.life) == (2, 1, 2)
    assert nxt.this_life()["replayed"] == 1 and nxt.totals()["replayed"] == 3


def test_a_dead_lettered_record_leaves_no_cause_behind() -> None:
    led = TaskLedger("lines", 0)
    led.emitted_tracked(M("t", 0, 0))
    led.failed_tree(M("t", 0, 0), "fail")
    led.forget(M("t", 0, 0))
    assert led.causes == {}


def test_bad_records_raise_a_named_decode_error() -> None:
    with pytest.raises(DecodeError, match=r"\[lines\] cannot decode record squall.t.__ledger\[2\]@9: bad spout ledger record"):
        TaskLedger.from_json({"component": "lines", "task": 2}, topic="squall.t.__ledger", partition=2, offset=9)
    # a record without a component is named by its reader
    with pytest.raises(DecodeError, match=r"^\[lines\] cannot decode record squall.t.__ledger\[2\]@9"):
        parse_ledger(b"{}", component="lines", topic="squall.t.__ledger", partition=2, offset=9)
    with pytest.raises(ValueError, match=r"\[lines\] unknown replay cause"):
        TaskLedger("lines", 0).failed_tree(M("t", 0, 0), "boredom")
    newer = TaskLedger("lines", 0, life=2, seq=1)
    assert newer.newer_than(TaskLedger("lines", 0, life=1, seq=50)) and not TaskLedger("lines", 0).newer_than(newer)
