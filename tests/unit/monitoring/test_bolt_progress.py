"""Bolt re-executions: the progress record and the window of offsets a new life executes again."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.exceptions import DecodeError
from streams.monitoring.bolt_progress import decode_progress, encode_progress, progress_key, reexecution_window

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "schemas" / "progress.schema.json").read_text())


def test_a_progress_record_round_trips_validates_and_bad_ones_name_where() -> None:
    raw = encode_progress(1234, "vm:/data/supervisors/s1")
    jsonschema.validate(json.loads(raw), SCHEMA)
    assert decode_progress(raw, component="count", topic="t", partition=0, offset=9) == (1234, "vm:/data/supervisors/s1")
    assert progress_key("count", 7) == b"count:7"
    with pytest.raises(DecodeError, match=r"\[count\] cannot decode record t\[0\]@9"):
        decode_progress(b'{"flushed": -1, "place": "x"}', component="count", topic="t", partition=0, offset=9)


@given(st.integers(0, 10**6), st.integers(-2, 10**6), st.sampled_from(["a", "b"]), st.sampled_from(["a", "b"]))
def test_exactly_the_offsets_the_last_life_flushed_past_the_commit_are_re_executions(flushed: int, committed: int, was: str, now: str) -> None:
    until, cause = reexecution_window((flushed, was), committed, now)
    reexecuted = [off for off in range(max(committed, 0), flushed + 3) if off < until]
    assert reexecuted == list(range(max(committed, 0), flushed))  # from the commit to the last flush, no more
    if reexecuted:
        assert cause == ("restart" if was == now else "takeover")
    assert reexecution_window(None, committed, now) == (-1, "")
