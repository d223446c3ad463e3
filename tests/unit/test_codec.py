from __future__ import annotations

import pytest

from streams.acker_wire import decode_list
from streams.codec import decode_tuple, encode_tuple
from streams.exceptions import DecodeError, SquallError


def test_tuple_roundtrip_keeps_64_bit_ids_and_unicode() -> None:
    anchors = {2**64 - 1: 2**63 + 5, 17: 1}
    raw = encode_tuple("words", "split", 3, ["naïve", 1, None], anchors)
    assert decode_tuple(raw, component="c", topic="t", partition=0, offset=0) == ("words", "split", 3, ["naïve", 1, None], anchors, None)


@pytest.mark.parametrize("raw", [b"not json", b"[1,2]", b'[9,"s","c",0,[],[]]', b'[1,"s","c",0,[],[1]]', None, b"\xff\xfe"])
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
