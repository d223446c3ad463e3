"""A drain's hand-off of transactional batches (streams.runtime.handoff): every tuple is executed by exactly one life."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from streams.model.batch import BATCH_END_STREAM, COMMIT_STREAM
from streams.model.tuple import Tuple
from streams.monitoring.bolt_progress import decode_progress, encode_progress
from streams.runtime.handoff import TaskHandoff, WorkerHandoff

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "schemas" / "progress.schema.json").read_text())


def _tuple(kind: str, txid: int | None) -> Tuple:
    if txid is None:
        return Tuple(["x"], "default", "split", 1, {}, {})
    if kind == "marker":
        return Tuple([txid, 1, 3], BATCH_END_STREAM, "split", 1, {}, {})
    if kind == "commit":
        return Tuple([txid, 1], COMMIT_STREAM, "lines", 0, {}, {})
    return Tuple(["w"], "default", "split", 1, {}, {}, batch=(txid, 1))


records_st = st.lists(
    st.lists(st.tuples(st.sampled_from(["data", "marker", "commit"]), st.one_of(st.none(), st.integers(0, 12))), min_size=1, max_size=4),
    min_size=1,
    max_size=40,
)


@given(records_st, st.data())
def test_every_tuple_runs_in_exactly_one_life_whatever_the_interleaving_and_wherever_the_next_life_starts(
    spec: list[list[tuple[str, int | None]]], data: st.DataObject
) -> None:
    records = [[_tuple(kind, txid) for kind, txid in rec] for rec in spec]
    begin = data.draw(st.integers(0, len(records)), label="drain begins at record")
    stop = data.draw(st.integers(begin, len(records)), label="the old life stops after record")
    seen = [t.batch[0] if t.batch else t.values[0] for rec in records[:begin] for t in rec if t.batch or t.stream != "default"]
    cutoff = max(seen, default=-1) + data.draw(st.integers(0, 2), label="another task's higher txid")
    ran: dict[int, int] = {}
    # the old life: everything before the drain, then the batches up to the cutoff
    give = TaskHandoff.give(cutoff)
    for off, rec in enumerate(records[:stop]):
        for t in rec:
            if off < begin or give.executes(t, off):
                ran[id(t)] = ran.get(id(t), 0) + 1
    committed = give.committable(stop)
    assert committed == (give.held_from if give.held_from >= 0 else stop)
    # the new life: from the commit, or from an older one (its last confirmed commit, a crash)
    start = data.draw(st.integers(min(begin, committed), committed), label="the new life starts at")
    take = TaskHandoff.take(cutoff, stop)
    for off in range(start, len(records)):
        for t in records[off]:
            if take.executes(t, off):
                ran[id(t)] = ran.get(id(t), 0) + 1
    assert all(ran.get(id(t)) == 1 for rec in records for t in rec), "a tuple ran twice or never"
    assert not take.taking or start >= stop or len(records) <= stop  # past L the new life takes everything


def test_the_progress_record_carries_the_handoff_and_validates() -> None:
    raw = encode_progress(120, "h:/s1", 7, 120, (41, 133))
    jsonschema.validate(json.loads(raw), SCHEMA)
    assert decode_progress(raw, component="count", topic="t", partition=2, offset=5).handoff == (41, 133)
    assert "handoff" not in json.loads(encode_progress(120, "h:/s1"))
    for bad in ([41], [41, -1], ["41", 133]):
        try:
            decode_progress(json.dumps({"flushed": 1, "place": "p", "handoff": bad}).encode(), component="count", topic="t", partition=2, offset=5)
        except Exception as exc:
            assert "[count]" in str(exc) and "t[2]@5" in str(exc)
        else:
            raise AssertionError(f"accepted handoff {bad}")


class _Executor:
    def __init__(self, high: int, holds: bool = True) -> None:
        self.component = "count"
        self.holds_batches = holds
        self.handoff_high: int | None = None
        self.asked = False
        self.cutoff: int | None = None
        self._high = high
        self.done = False

    def ask_handoff(self) -> None:
        self.asked = True

    def pause(self) -> None:  # its thread, at the end of a round
        self.handoff_high = self._high

    def give_handoff(self, cutoff: int) -> None:
        self.cutoff = cutoff

    def handoff_done(self) -> bool:
        return self.done


def test_one_cutoff_per_worker_the_highest_seen_and_the_wait_is_bounded() -> None:
    split, count, plain = _Executor(9), _Executor(12), _Executor(99, holds=False)
    w = WorkerHandoff([split, count, plain], now=0.0, max_s=20.0)
    assert split.asked and count.asked and not plain.asked
    split.pause()
    assert not w.step(1.0) and split.cutoff is None  # count has not paused yet
    count.pause()
    assert not w.step(2.0) and split.cutoff == count.cutoff == 12 and w.cutoff == 12  # split may need count's part of 12
    split.done = True
    assert not w.step(3.0)
    assert w.step(25.0) and w.gave_up  # count never finished: bounded
    assert WorkerHandoff([plain], now=0.0).step(0.0)  # nothing holds batches: done at once


class _Coordinated:
    """A HoldsBatches bolt: the txids it holds, and the highest it saw."""

    def __init__(self, held: set[int], high: int) -> None:
        self.held = held
        self.high = high

    def highest_txid(self) -> int:
        return self.high

    def holds_batches_through(self, txid: int) -> bool:
        return any(t <= txid for t in self.held)


class _Task:
    def __init__(self, task_id: int, bolt: object) -> None:
        self.task_id = task_id
        self.bolt = bolt
        self.handoff: TaskHandoff | None = None


def test_an_executor_pauses_reports_gives_and_is_done_once_it_holds_nothing_up_to_the_cutoff() -> None:
    from streams.runtime.handoff import ExecutorHandoff

    split, count = _Task(1, _Coordinated({7}, 7)), _Task(5, _Coordinated({6, 9}, 9))
    h = ExecutorHandoff("count", "w1")
    assert not h.active and not h.round([split, count])  # not asked: runs
    h.ask_handoff()
    assert h.round([split, count]) and h.handoff_high == 9  # step 1: paused, its highest reported
    assert h.round([split, count])  # still paused: no cutoff yet
    h.give_handoff(10)  # another executor of the worker saw 10
    assert not h.round([split, count]) and split.handoff is not None and split.handoff.cutoff == 10  # step 2: giving
    assert not h.round([split, count]) and not h.handoff_done()  # batches up to 10 still held
    split.bolt.held.clear()  # type: ignore[attr-defined]
    count.bolt.held = {11}  # type: ignore[attr-defined]  # only a batch after the cutoff: the next life's
    assert h.round([split, count]) and h.handoff_done()  # step 3


def test_a_task_still_taking_over_does_not_hand_off_again() -> None:
    from streams.runtime.handoff import ExecutorHandoff

    task = _Task(5, _Coordinated({3}, 3))
    task.handoff = TaskHandoff.take(cutoff=2, until=100)
    h = ExecutorHandoff("count", "w1")
    h.ask_handoff()
    assert h.round([task]) and h.handoff_done() and h.handoff_high is None
