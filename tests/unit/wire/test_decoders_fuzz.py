"""Wire decoders under hypothesis (issue 15): malformed bytes give a DecodeError naming the
component, topic, partition and offset, never another exception; what they accept is safe
to apply (the acker's ledger, the changelog restore, a bolt's Tuple)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from acker.durable import DurableLedger, decode_changelog
from acker.ledger import Ledger
from streams.exceptions import DecodeError
from streams.monitoring.ledger_store import parse_ledger
from streams.wire.acker import decode_ops, decode_results, encode_ops, root_key
from streams.wire.codec import decode_tuple, decode_tuples, encode_tuple

WHERE: dict[str, Any] = {"component": "split", "topic": "squall.t.x", "partition": 3, "offset": 41}
NAMED = "[split] cannot decode record squall.t.x[3]@41: "

ints = st.one_of(st.integers(-(2**70), 2**70), st.integers(0, 8), st.booleans(), st.floats(allow_nan=False))
json_values = st.recursive(
    st.one_of(st.none(), ints, st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=6), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=25,
)
near_ops = st.lists(st.lists(st.one_of(ints, st.text(max_size=4)), min_size=0, max_size=5), max_size=6)  # strings: a fail may say why
raw_bytes = st.one_of(
    st.binary(max_size=200),
    json_values.map(lambda v: json.dumps(v).encode()),
    near_ops.map(lambda v: json.dumps(v).encode()),
    st.none(),
)


def decoded_or_named(fn: Any, *args: Any) -> Any:
    """``fn(*args, **WHERE)``, or None if it raised a DecodeError naming the record."""
    try:
        return fn(*args, **WHERE)
    except DecodeError as exc:
        assert str(exc).startswith(NAMED), str(exc)
        assert (exc.component, exc.topic, exc.partition, exc.offset) == ("split", "squall.t.x", 3, 41)
        return None


@settings(max_examples=600, deadline=None)
@given(raw_bytes)
@example(b"[[0, 5, 9, 65534]]")  # a spout task the acker's table cannot hold (found by this test)
@example(b"[[0, 5, 9, 65533]]")
def test_acker_ops_decode_or_name_the_record_and_apply_safely(raw: bytes | None) -> None:
    ops = decoded_or_named(decode_ops, raw)
    if ops is None:
        return
    dl = DurableLedger(Ledger(30.0))
    dl.apply(41, ops)  # never raises on what decode_ops accepted
    for root, value in dl.changelog():
        assert len(root_key(root)) == 8 and value is not None
    assert encode_ops(ops) == json.dumps(ops, separators=(",", ":")).encode()


@settings(max_examples=600, deadline=None)
@given(raw_bytes)
def test_ack_results_decode_or_name_the_record(raw: bytes | None) -> None:
    results = decoded_or_named(decode_results, raw)
    for code, root, latency, why in results or []:
        assert code in (0, 1, 2) and 0 <= root < 2**64 and isinstance(latency, float) and isinstance(why, str) and (not why or code == 1)


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.binary(max_size=10), st.just(b"\x00" * 7 + b"\x05"), st.none()), raw_bytes)
@example(b"\x00" * 7 + b"\x05", b"[0, 0, 281474976711, 0]")  # a start past 48 bits of ms overflowed the table (found by this test)
@example(b"\x00" * 7 + b"\x05", b"[0, 65534, 1.0, 0]")
@example(b"\x00" * 7 + b"\x05", b"[0, 0, 1.0, 4611686018427387903]")
def test_changelog_records_decode_or_name_the_record_and_restore_safely(key: bytes | None, raw: bytes | None) -> None:
    got = decoded_or_named(decode_changelog, key, raw)
    if got is not None:
        dl = DurableLedger(Ledger(30.0))
        dl.restore(*got)  # never raises on what decode_changelog accepted
        dl.changelog()


@settings(max_examples=600, deadline=None)
@given(
    st.one_of(
        raw_bytes,
        st.lists(json_values, min_size=6, max_size=8).map(lambda v: json.dumps([1, *v[1:]]).encode()),  # version 1 (no epoch)
        st.lists(json_values, min_size=7, max_size=9).map(lambda v: json.dumps([2, *v[1:]]).encode()),
    )
)
def test_tuple_envelopes_decode_or_name_the_record(raw: bytes | None) -> None:
    env = decoded_or_named(decode_tuple, raw)
    if env is not None:
        stream, source, task, epoch, values, anchors, batch, tid = env
        assert isinstance(stream, str) and isinstance(source, str) and isinstance(task, int) and isinstance(values, list)
        assert all(0 <= k < 2**64 and 0 <= v < 2**64 for k, v in anchors.items()) and 0 <= epoch < 2**64
        assert decode_tuple(encode_tuple(stream, source, task, values, anchors, batch, tid, epoch=epoch), **WHERE) == env


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        raw_bytes,
        st.lists(st.lists(json_values, min_size=7, max_size=9).map(lambda v: [2, *v[1:]]), max_size=4).map(lambda v: json.dumps([3, *v]).encode()),
        st.lists(json_values, max_size=4).map(lambda v: json.dumps([3, *v]).encode()),
        st.lists(json_values, max_size=5).map(lambda v: json.dumps([4, *v]).encode()),
        st.lists(st.tuples(st.lists(json_values, min_size=4, max_size=4), st.lists(st.lists(json_values, min_size=2, max_size=4), max_size=3)), max_size=3).map(
            lambda runs: json.dumps([4, *(x for head, items in runs for x in (head, items))]).encode()
        ),
        st.lists(json_values, max_size=5).map(lambda v: json.dumps([6, *v]).encode()),
        st.lists(
            st.tuples(
                st.lists(json_values, min_size=3, max_size=5),
                st.integers(-1, 2**64),
                st.integers(-1, 2**64),
                st.lists(st.one_of(st.lists(json_values, max_size=2), json_values), max_size=3),
            ).map(list),
            max_size=3,
        ).map(lambda segs: json.dumps([6, *segs]).encode()),
    )
)
def test_packs_decode_whole_or_name_the_record(raw: bytes | None) -> None:
    """A record is a tuple or a pack of them, all or nothing: each envelope decodes as it would alone."""
    envs = decoded_or_named(decode_tuples, raw)
    if envs is not None:
        assert envs, "a pack holds at least one envelope"
        again = [decode_tuple(encode_tuple(s, c, t, v, a, b, i, epoch=e), **WHERE) for s, c, t, e, v, a, b, i in envs]
        assert again == envs


@settings(max_examples=300, deadline=None)
@given(raw_bytes)
def test_spout_ledger_records_decode_or_name_the_record(raw: bytes | None) -> None:
    try:
        parse_ledger(raw, component="lines", topic="squall.t.__ledger", partition=3, offset=41)
    except DecodeError as exc:
        assert "squall.t.__ledger[3]@41" in str(exc)
        assert str(exc).startswith("[")  # a component: the record's own, else the reader's


@settings(max_examples=1000, deadline=None)
@given(near_ops)
def test_the_fast_op_check_agrees_with_the_named_one(ops: list[Any]) -> None:
    from streams.wire.acker import _op_problem, _ops_ok

    assert _ops_ok(ops) == all(_op_problem(op) is None for op in ops)


def test_an_init_naming_a_spout_task_beyond_the_acker_s_table_is_named_not_applied() -> None:
    assert decode_ops(b"[[0, 5, 9, 65533]]", **WHERE) == [[0, 5, 9, 65533]]
    with pytest.raises(DecodeError) as exc:
        decode_ops(b"[[0, 5, 9, 65534]]", **WHERE)
    assert str(exc.value) == NAMED + "op 0: the spout task must be an integer in 0..65533"
