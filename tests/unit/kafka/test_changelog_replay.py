"""How a changelog partition becomes a task's committed checkpoint (streams.kafka.changelog_store._Replay),
without a broker: whatever the history of commits, aborted commits and crashes, what the reader
rebuilds equals the last committed checkpoint, whether it sees aborted records (the embedded
broker) or not (Apache Kafka with read_committed), and after Kafka's compaction."""

from __future__ import annotations

import json
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.kafka.changelog_store import _Replay

KEYS = ["a", "b", "c", "d"]


@dataclass
class Rec:
    epoch: int
    attempt: int
    key: bytes
    value: bytes | None
    committed: bool


# One step of a task's life: a commit that succeeds, one that is aborted (its changes stay pending
# and the next attempt writes them again), or a crash in the middle of a commit (a new epoch follows).
step = st.tuples(st.sampled_from(["commit", "abort", "crash"]), st.dictionaries(st.sampled_from(KEYS), st.one_of(st.none(), st.integers(0, 9)), max_size=3))


def simulate(steps: list[tuple[str, dict[str, int | None]]]) -> tuple[list[Rec], dict[str, str], int]:
    """The changelog the store writes for ``steps``, and the truth: the last committed values and checkpoint number."""
    log: list[Rec] = []
    truth: dict[str, str] = {}
    checkpoint = 0
    epoch, attempt = 1, 0
    pending: dict[str, int | None] = {}
    for kind, changes in steps:
        pending.update(changes)
        attempt += 1
        committed = kind == "commit"
        for k, v in pending.items():
            log.append(Rec(epoch, attempt, b"v" + json.dumps(k).encode(), None if v is None else str(v).encode(), committed))
        if kind == "crash":
            epoch, attempt, pending = epoch + 1, 0, {}  # the next owner restores the last checkpoint
            continue
        marker = json.dumps({"checkpoint": checkpoint + 1, "attempt": attempt, "at": 0.0}).encode()
        log.append(Rec(epoch, attempt, b"c%d" % epoch, marker, committed))
        if not committed:  # the abort note, in a transaction of its own
            attempt += 1
            log.append(Rec(epoch, attempt, b"x%d.%d" % (epoch, attempt - 1), b"", True))
            continue
        if committed:
            checkpoint += 1
            for k, v in pending.items():
                if v is None:
                    truth.pop(json.dumps(k), None)
                else:
                    truth[json.dumps(k)] = str(v)
            pending = {}
    return log, truth, checkpoint


def compact(log: list[Rec]) -> list[Rec]:
    """Kafka's log cleaner: aborted records go, then only the last record per key stays (tombstones kept)."""
    kept = [r for r in log if r.committed]
    last = {r.key: i for i, r in enumerate(kept)}
    return [r for i, r in enumerate(kept) if last[r.key] == i]


def replay(log: list[Rec]) -> _Replay:
    out = _Replay()
    for r in log:
        out.add(r.epoch, r.attempt, r.key, r.value)
    return out.finish()


@settings(max_examples=400, deadline=None)
@given(st.lists(step, max_size=25))
def test_the_reader_rebuilds_the_last_committed_checkpoint(steps: list[tuple[str, dict[str, int | None]]]) -> None:
    log, truth, checkpoint = simulate(steps)
    for seen in (log, [r for r in log if r.committed], compact(log)):  # embedded broker, read_committed, compacted
        got = replay(seen)
        assert got.values == truth
        assert got.checkpoint == checkpoint
    # The next owner's epoch is above every epoch written so far.
    assert replay(log).max_epoch + 1 > max((r.epoch for r in log), default=0)


def test_a_crash_in_the_middle_of_a_commit_leaves_the_previous_values() -> None:
    log, truth, checkpoint = simulate([("commit", {"a": 1}), ("crash", {"a": 2, "b": 3})])
    assert replay(log).values == truth == {'"a"': "1"} and checkpoint == 1
    assert replay(log).ignored == 2  # the cut-short checkpoint's records


def test_an_aborted_commit_is_void_even_where_aborted_records_show() -> None:
    """The embedded broker shows an aborted transaction's marker; the abort note after it voids it,
    and so does the writer's own memory when the note could not be written."""
    log, truth, _ = simulate([("commit", {"a": 1}), ("abort", {"a": 2})])
    assert replay(log).values == truth == {'"a"': "1"}
    without_note = [r for r in log if not r.key.startswith(b"x")]
    own = _Replay(aborted={(1, 2)})
    for r in without_note:
        own.add(r.epoch, r.attempt, r.key, r.value)
    assert own.finish().values == {'"a"': "1"} and own.checkpoint == 1
