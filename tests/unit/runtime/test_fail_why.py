"""A fail says why, from the bolt's collector through the acker to the spout's dead letter (issue 25).

The ops go through the real :class:`AckBuffer`, :class:`DurableLedger` and
:func:`record_outcomes`, the wire's encoders and decoders, :class:`SpoutTasks` and a real
:class:`KafkaSpout`: nothing in between is a stand-in but the clock and the dead-letter sink.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acker.common import record_outcomes
from acker.durable import MAX_EARLY_WHYS, DurableLedger
from acker.ledger import Ledger
from streams import FailedException, Tuple
from streams.exceptions import DecodeError
from streams.kafka.fetch_gaps import FakeRecord as Msg
from streams.kafka.source import KafkaMessageId, SourceIO
from streams.monitoring.spout_ledger import TaskLedger
from streams.monitoring.stats import ExecutorStats
from streams.runtime.acks import AckBuffer
from streams.runtime.bolt_task import execute_guarded
from streams.runtime.inflight import InFlightTrees
from streams.runtime.pending_bound import FixedBound
from streams.runtime.spout_tasks import SpoutTask, SpoutTasks
from streams.wire.acker import MAX_WHY_CHARS, decode_ops, decode_results, encode_ops, encode_results, why_text
from tests.unit.kafka.test_record_trees import open_spout
from tests.unit.sim import Capture, collector

WHERE: dict[str, Any] = {"component": "lines", "topic": "squall.t.__ack_result", "partition": 0, "offset": 9}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def spout_tuple(root: int) -> Tuple:
    return Tuple(["a"], "default", "lines", 0, {root: 0b101}, {"v": 0})


def ops_of(acks: AckBuffer) -> list[list[Any]]:
    """What the executor's flush would send, through the wire's encoder and decoder."""
    out: list[list[Any]] = []
    for ops in acks.drain().values():
        out += decode_ops(encode_ops(ops), component="__acker", topic="squall.t.__acker", partition=0, offset=0)
    return out


class Raises:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def execute(self, t: Tuple) -> None:
        raise self.exc


def test_each_kind_of_fail_puts_its_words_on_the_fail_op() -> None:
    acks = AckBuffer("acker", 1)
    coll = collector(Capture(), acks)  # component "b"
    coll.fail(spout_tuple(1), "no such user")
    coll.fail(spout_tuple(2))  # Storm's silent fail
    assert isinstance(execute_guarded(Raises(ZeroDivisionError("division by zero")), coll, spout_tuple(3)), ZeroDivisionError)  # type: ignore[arg-type]
    assert execute_guarded(Raises(FailedException("stale row")), coll, spout_tuple(4)) is None  # type: ignore[arg-type]
    assert sorted(ops_of(acks)) == [
        [2, 1, "[b] fail: no such user"],
        [2, 2, "[b] fail"],
        [2, 3, "[b] ZeroDivisionError: division by zero"],
        [2, 4, "[b] fail: stale row"],
    ]


def test_a_settled_tuple_fails_no_more_and_reports_nothing() -> None:
    acks = AckBuffer("acker", 1)
    coll = collector(Capture(), acks)
    reported: list[Any] = []
    coll.report_error = lambda error, t=None: reported.append(error)  # type: ignore[method-assign,assignment]
    t = spout_tuple(7)
    coll.fail(t, "first")
    coll.fail(t, "second")
    assert ops_of(acks) == [[2, 7, "[b] fail: first"]] and reported == ["first"] and coll.failed == 1


def test_the_acker_answers_with_the_fail_ops_words_before_or_after_the_init() -> None:
    clock = Clock()
    dl = DurableLedger(Ledger(30.0, clock=clock))
    stats, results = ExecutorStats("t", "__acker", "acker", "w0"), {}  # type: ignore[var-annotated]
    record_outcomes(dl.apply(0, [[0, 11, 5, 0], [2, 11, "[split] ValueError: bad line"]]), stats, results)  # init, then fail
    record_outcomes(dl.apply(1, [[2, 12, "[count] fail: too long"]]), stats, results)  # the fail before the init
    assert dl.whys == {12: "[count] fail: too long"}
    record_outcomes(dl.apply(2, [[0, 12, 3, 0], [0, 13, 4, 0], [2, 13]]), stats, results)  # 13 fails silently
    record_outcomes(dl.apply(3, [[0, 14, 6, 0]]), stats, results)
    clock.now += 61  # 14 times out at the acker
    record_outcomes(dl.expire(), stats, results)
    decoded = decode_results(encode_results(results[0]), **WHERE)
    assert [(code, root, why) for code, root, _, why in decoded] == [
        (1, 11, "[split] ValueError: bad line"),
        (1, 12, "[count] fail: too long"),
        (1, 13, ""),
        (1, 14, "[__acker] timeout"),
    ]
    assert dl.whys == {}


def test_early_whys_are_bounded() -> None:
    dl = DurableLedger(Ledger(30.0))
    for root in range(1, MAX_EARLY_WHYS + 3):
        dl.apply(root, [[2, root, f"[b] fail: {root}"]])
    assert len(dl.whys) == MAX_EARLY_WHYS and 1 not in dl.whys and 2 not in dl.whys and dl.whys[MAX_EARLY_WHYS + 2] == f"[b] fail: {MAX_EARLY_WHYS + 2}"


def test_the_spout_puts_the_last_why_in_the_dead_letter_and_an_acker_timeout_is_a_timeout() -> None:
    spout, _, _ = open_spout(tree_records=1, max_retries=2)
    headers: list[dict[str, str]] = []
    spout.bind(SourceIO(lambda msg, reason, attempts, details: headers.append({"reason": reason, **details})))
    spout.on_records([Msg("t", 0, 0, b"r0")])
    clock = Clock()
    core = SpoutTasks(InFlightTrees(clock), FixedBound(10), ExecutorStats("t", "lines", "spout", "w0"))
    core.by_task[0] = SpoutTask(0, spout, SimpleNamespace(hooks=[]), TaskLedger("lines", 0), source=spout)  # type: ignore[arg-type]
    mid = KafkaMessageId("t", 0, 0)
    for root, why in ((21, "[check] ZeroDivisionError: division by zero"), (22, "[__acker] timeout"), (23, "")):
        spout.next_tuple()
        core.inflight.track(root, 0, mid)
        assert core.settle([(1, root, 0.5, why)]) == 1
    assert headers == [
        {
            "reason": "[lines] gave up after 3 failures (the last: fail)",  # the last fail said nothing
            "cause": "fail",
            "first.failure": headers[0]["first.failure"],
            "last.failure": headers[0]["last.failure"],
            "root": "23",
            "roots": "21,22,23",
        }
    ]
    spout.on_records([Msg("t", 0, 1, b"r1")])
    mid = KafkaMessageId("t", 0, 1)
    for root in (31, 32, 33):
        spout.next_tuple()
        core.inflight.track(root, 0, mid)
        if root == 33:
            clock.now += 31
            assert core.timeouts(30.0) == 1  # the spout's own timeout
        else:
            core.settle([(1, root, 0.5, "[__acker] timeout")])
    assert headers[1]["cause"] == "timeout" and headers[1]["why"] == "[lines] no ack within the message timeout of 30 s"
    assert headers[1]["reason"] == "[lines] gave up after 3 failures (the last: timeout: [lines] no ack within the message timeout of 30 s)"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_why_survives_the_wire_cut_to_its_limit(text: str) -> None:
    why = why_text("b", text)
    assert len(why) <= MAX_WHY_CHARS and why.startswith("[b] ")
    assert decode_ops(encode_ops([[2, 5, why]]), **WHERE) == [[2, 5, why]]
    assert decode_results(encode_results([[1, 5, 0.25, why]]), **WHERE) == [(1, 5, 0.25, why)]


@pytest.mark.parametrize(
    "raw",
    [
        [[2, 5, 7]],  # a why is a string
        [[2, 5, "x" * (MAX_WHY_CHARS + 1)]],
        [[3, 5, "why"]],  # only a fail says why
        [[1, 5, 9, "why"]],
    ],
)
def test_a_why_where_none_belongs_or_too_long_is_a_named_decode_error(raw: list[Any]) -> None:
    with pytest.raises(DecodeError, match=r"^\[__acker\] cannot decode record t\[0\]@3: op 0: "):
        decode_ops(json.dumps(raw).encode(), component="__acker", topic="t", partition=0, offset=3)


@pytest.mark.parametrize("raw", [[[0, 5, 0.1, "why"]], [[1, 5, 0.1, 7]], [[1, 5, 0.1, "x" * (MAX_WHY_CHARS + 1)]], [[1, 5, 0.1, "a", "b"]]])
def test_a_result_with_a_misplaced_why_is_a_named_decode_error(raw: list[Any]) -> None:
    with pytest.raises(DecodeError, match=r"^\[lines\] cannot decode record squall.t.__ack_result\[0\]@9: result 0: "):
        decode_results(json.dumps(raw).encode(), **WHERE)
