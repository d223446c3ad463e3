from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams import SquallError
from streams.exceptions import DecodeError
from streams.wire.acker import decode_list
from streams.wire.codec import _decode_checked, decode_tuple, encode_batched, encode_rooted, encode_tuple


def test_tuple_roundtrip_keeps_64_bit_ids_and_unicode() -> None:
    anchors = {2**64 - 1: 2**63 + 5, 17: 1}
    raw = encode_tuple("words", "split", 3, ["naïve", 1, None], anchors, epoch=1_764_232_345_123)
    assert decode_tuple(raw, component="c", topic="t", partition=0, offset=0) == (
        "words",
        "split",
        3,
        1_764_232_345_123,
        ["naïve", 1, None],
        anchors,
        None,
        None,
    )


def test_a_version_1_envelope_is_read_as_epoch_0_or_its_batch_epoch() -> None:
    """Records written before epochs (still in a topic across an upgrade) are read: version 1 had no epoch, and its batch carried the sender's life."""
    assert decode_tuple(b'[1,"default","split",3,["a"],[5,9]]', component="c", topic="t", partition=0, offset=0) == (
        "default",
        "split",
        3,
        0,
        ["a"],
        {5: 9},
        None,
        None,
    )
    assert decode_tuple(b'[1,"__commit","lines",0,[4,1],[6,3],[4,1,12]]', component="c", topic="t", partition=0, offset=0)[3:] == (
        12,
        [4, 1],
        {6: 3},
        (4, 1),
        None,
    )
    assert decode_tuple(b'[1,"default","split",3,["a"],[5,9],null,[1,2,3]]', component="c", topic="t", partition=0, offset=0)[3:] == (
        0,
        ["a"],
        {5: 9},
        None,
        (1, 2, 3),
    )


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1,2]",
        b'[9,"s","c",0,[],[]]',
        b'[1,"s","c",0,[],[1]]',
        None,
        b"\xff\xfe",
        b'[1,"s","c",0,[],[],null,[1,-2,3]]',
        b'[1,"s","c",0,[],[],null,[1]]',
        b'[2,"s","c",0,-1,[],[]]',
        b'[2,"s","c",0,"7",[],[]]',
        b'[2,"s","c",0,7,[],[],[1,2,3]]',
        b'[2,"s","c",0,7,[],[]',
        b'[2,"s","c",0,7,[],[],null,[1,2]]',
    ],
)
def test_bad_envelopes_raise_decode_error_naming_where(raw: bytes | None) -> None:
    with pytest.raises(DecodeError) as exc:
        decode_tuple(raw, component="count", topic="squall.t.count", partition=2, offset=41)
    err = exc.value
    assert isinstance(err, SquallError)
    assert (err.component, err.topic, err.partition, err.offset) == ("count", "squall.t.count", 2, 41)
    assert "[count]" in str(err) and "squall.t.count[2]@41" in str(err)


def test_acker_record_must_be_a_list() -> None:
    with pytest.raises(DecodeError):
        decode_list(b'{"a": 1}', component="__acker", topic="x", partition=0, offset=1)
    assert decode_list(b"[[1,2,3]]", component="__acker", topic="x", partition=0, offset=1) == [[1, 2, 3]]


ids = st.integers(0, 2**64 - 1)


@settings(max_examples=300, deadline=None)
@given(
    stream=st.text(max_size=8),
    task=st.integers(0, 1000),
    values=st.lists(st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(max_size=5), st.none())),
    root=ids,
    edge=ids,
)
def test_the_one_root_fast_paths_agree_with_the_general_codec(stream: str, task: int, values: list[object], root: int, edge: int) -> None:
    """encode_rooted and encode_batched are byte-identical to encode_tuple with ``{root: edge}``
    (and a batch), and the decoder's fast paths return what the general path returns."""
    epoch = 1_764_232_345_123
    raw = encode_rooted(stream, "split", task, epoch, values, root, edge)
    assert raw == encode_tuple(stream, "split", task, values, {root: edge}, epoch=epoch)
    got = decode_tuple(raw, component="c", topic="t", partition=0, offset=0)
    assert got == (stream, "split", task, epoch, values, {root: edge}, None, None)
    batched = encode_batched(stream, "split", task, epoch, values, root, edge, (7, 1))
    assert batched == encode_tuple(stream, "split", task, values, {root: edge}, (7, 1), epoch=epoch)
    with_batch = decode_tuple(batched, component="c", topic="t", partition=0, offset=0)
    assert with_batch == (*got[:6], (7, 1), None)
    assert with_batch == _decode_checked(orjson.loads(batched))  # the batch's fast path returns what the general path returns
    tid = (2**31 - 1, 2**40, 2**32 - 1)
    with_id = decode_tuple(encode_rooted(stream, "split", task, epoch, values, root, edge, tid), component="c", topic="t", partition=0, offset=0)
    assert with_id == (*got[:7], tid)
    both = decode_tuple(encode_tuple(stream, "split", task, values, {root: edge}, (7, 1), tid, epoch=epoch), component="c", topic="t", partition=0, offset=0)
    assert both[6:] == ((7, 1), tid)


@pytest.mark.parametrize(
    "raw",
    [
        b'[2,"s","c",0,1,[],[-1,2]]',
        b'[2,"s","c",0,1,[],[18446744073709551616,2]]',
        b'[2,"s","c",0,1,[],[1.5,2]]',
        b'[2,"s","c",0,1.5,[],[1,2]]',
        b'[2,"s","c",0,1,[],[1,2],null,[1,2,-3]]',
        b'[2,"s","c",0,1,[],[1,2],null]',
        b'[2,"s","c",0,1,[],[1,2],[7]]',
        b'[2,"s","c",0,1,[],[1,2],[7,"1"]]',
        b'[2,"s","c",0,1,[],[1,2],{"txid":7}]',
    ],
)
def test_the_fast_path_rejects_what_the_general_path_rejects(raw: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_tuple(raw, component="c", topic="t", partition=0, offset=0)
