"""Bolt re-executions: the progress record and the window of offsets a new life executes again."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.exceptions import DecodeError
from streams.monitoring.bolt_progress import Progress, decode_progress, encode_progress, progress_key, reexecution_window
from streams.wire.commits import fenced_commit

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "schemas" / "progress.schema.json").read_text())


def test_a_progress_record_round_trips_validates_and_bad_ones_name_where() -> None:
    raw = encode_progress(1234, "vm:/data/supervisors/s1")
    jsonschema.validate(json.loads(raw), SCHEMA)
    assert decode_progress(raw, component="count", topic="t", partition=0, offset=9) == (1234, "vm:/data/supervisors/s1", 0, -1, None, ())
    assert progress_key("count", 7) == b"count:7"
    fenced = encode_progress(1234, "vm:/s1", 900, 1200, None, [(0, 100, 3), (0, 200, 1100), (4, 900, 7)])
    jsonschema.validate(json.loads(fenced), SCHEMA)
    assert decode_progress(fenced, component="count", topic="t", partition=0, offset=9).fence == ((0, 100, 3), (0, 200, 1100), (4, 900, 7))
    with pytest.raises(DecodeError, match="fence must be"):
        decode_progress(b'{"flushed": 1, "place": "x", "fence": [[1, 2]]}', component="count", topic="t", partition=0, offset=9)
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


@given(
    st.lists(st.integers(0, 500), min_size=1, max_size=6),
    st.integers(0, 5),
    st.integers(0, 3000),
    st.booleans(),
)
def test_a_replaced_owners_late_commit_never_moves_a_task_behind_a_newer_lifes_confirmed_commit(
    steps: list[int], zombie: int, late: int, crashed: bool
) -> None:
    """Lives with epochs 10, 20, ... each advance and have a commit confirmed (the last may crash first).
    A life older than the last one commits ``late`` after all of them (TCP delivering what it sent during a cut).
    The next life starts from the newer confirmed commit, or from ``late`` when that is further on."""
    commits = list(itertools.accumulate(steps))
    last_epoch = 10 * len(commits)
    confirmed = commits[-2] if crashed and len(commits) > 1 else (-1 if crashed else commits[-1])
    previous = Progress(commits[-1] + 50, "h1", epoch=last_epoch, committed=confirmed)
    old_epoch = min(zombie * 10, last_epoch - 10) if len(commits) > 1 else 0
    start = fenced_commit(previous.epoch, previous.committed, late, old_epoch)
    assert max(late, confirmed) == (late if start is None else start)
    assert fenced_commit(previous.epoch, previous.committed, confirmed, last_epoch) is None  # the newest life's own commit stands
    raw = encode_progress(previous.flushed, previous.place, previous.epoch, previous.committed)
    jsonschema.validate(json.loads(raw), SCHEMA)
    assert decode_progress(raw, component="count", topic="t", partition=0, offset=1) == previous
