"""Epoch markers and the fence a reader keeps across its lives (issue 52): no record of an older epoch is taken.

A host cut off from the broker left records in flight that landed 53-54 s later, after the
processes that made them had been replaced. Two gaps let one through: a partition the new life
had not written yet, and a reader that restarted past the new life's records. Markers close
the first (every new life marks every partition it may write, first), the fence in the
progress record the second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.config import resolve
from streams.model.loader import load_topology
from streams.monitoring.bolt_progress import decode_progress, encode_progress, newest_lives, progress_key
from streams.monitoring.progress_store import TaskLives
from streams.runtime.bolt import BoltExecutor
from streams.runtime.executor import ExecutorEnv
from streams.runtime.fencing import EpochFence
from streams.testing.memlog import Record
from streams.wire.acker import read_from
from streams.wire.codec import decode_marker, encode_marker, encode_rooted
from streams.wire.naming import acker_topic, component_topic

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

events = st.lists(
    st.one_of(
        st.tuples(st.just("start"), st.integers(0, 2), st.just(0)),  # a new life of a sender: its marker
        st.tuples(st.just("write"), st.integers(0, 2), st.just(0)),  # the current life writes a record
        st.tuples(st.just("zombie"), st.integers(0, 2), st.integers(1, 3)),  # a record of a life k back lands (late)
        st.tuples(st.just("commit"), st.just(0), st.just(0)),  # the reader commits where it is, and writes its progress
        st.tuples(st.just("crash"), st.just(0), st.just(0)),  # the reader restarts from its last progress record
    ),
    max_size=80,
)


@settings(max_examples=400, deadline=None)
@given(events)
def test_no_reader_takes_a_record_of_an_older_life_than_one_before_it_in_the_partition(script: list[tuple[str, int, int]]) -> None:
    """Oracle: a record is taken iff no record or marker before it in the partition is of a newer life of its sender, whatever the reader's restarts."""
    log: list[tuple[bool, int, int]] = []  # (is a marker, sender, epoch), the partition in offset order
    epoch = {s: 1 for s in range(3)}
    for kind, sender, back in script:
        if kind == "start":
            epoch[sender] += 1
            log.append((True, sender, epoch[sender]))
        elif kind == "write":
            log.append((False, sender, epoch[sender]))
        elif kind == "zombie" and epoch[sender] - back >= 1:
            log.append((False, sender, epoch[sender] - back))

    def oracle(i: int) -> bool:
        _, sender, e = log[i]
        return all(f <= e for _, s, f in log[:i] if s == sender)

    fence, pos, progress = EpochFence(), 0, (0, list[tuple[int, int, int]]())
    steps = iter(k for k, _, _ in script if k in ("commit", "crash"))
    while pos < len(log):
        marker, sender, e = log[pos]
        if marker:
            fence.mark(0, sender, e, pos)
        else:
            assert fence.admit(0, sender, e, pos) == oracle(pos), (pos, log)
        pos += 1
        step = next(steps, None)
        if step == "commit":
            progress = (pos, fence.entries(0, pos))
        elif step == "crash":  # a new life of the reader: from its last commit, seeded from its progress record
            pos, entries = progress
            fence = EpochFence()
            fence.seed(0, entries, pos)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4), st.integers(0, 10_000)), min_size=1, max_size=30))
def test_progress_is_read_from_each_tasks_newest_life_whatever_lands_last(writes: list[tuple[int, int, int]]) -> None:
    """Records of several lives of several tasks, in any order (a replaced owner's landing late): each task's is its newest life's last record."""
    records = [(progress_key("count", task, epoch), encode_progress(flushed, "h:/s", epoch)) for task, epoch, flushed in writes]
    lives, stale = newest_lives(records, "count", lambda v: decode_progress(v, component="count", topic="t", partition=0, offset=0))
    for task in {t for t, _, _ in writes}:
        newest = max(e for t, e, _ in writes if t == task)
        assert lives[task].epoch == newest
        assert lives[task].flushed == [f for t, e, f in writes if (t, e) == (task, newest)][-1]
    assert set(stale) == {progress_key("count", t, e) for t, e, _ in writes if e < lives[t].epoch}
    tombstoned = records + [(key, None) for key in stale]
    assert newest_lives(tombstoned, "count", lambda v: decode_progress(v, component="count", topic="t", partition=0, offset=0))[1] == []


def bolt(component: str, epoch: int) -> tuple[BoltExecutor, list[tuple[str, bytes | None, bytes | None]]]:
    topology = load_topology(EXAMPLES / "wordcount.py", "markers")
    ex = BoltExecutor(
        ExecutorEnv(topology=topology, component=component, conf=resolve(topology.conf), bootstrap="127.0.0.1:1", workdir=Path("/tmp"), epoch=epoch)
    )
    sent: list[tuple[str, bytes | None, bytes | None]] = []
    ex.produce = ex.transfer.send = lambda topic, value, key=None, partition=-1, **kw: sent.append((topic, value, key))
    ex.by_partition[0] = ex._new_task(0)
    return ex, sent


def test_a_marker_fences_a_zombie_that_wrote_nothing_after_it_and_a_restarted_reader_still_does(monkeypatch: Any) -> None:
    import streams.runtime.bolt as bolt_module

    ex, sent = bolt("split", epoch=900)

    def line(epoch: int, off: int) -> Record:
        return Record(ex.topic, 0, off, encode_rooted("default", "lines", 0, epoch, ["to be"], off + 1, 77))

    ex._process(line(100, 0))  # the old life of spout task 0
    ex._process(Record(ex.topic, 0, 1, encode_marker("lines", [0], 200)))  # its new life starts here: nothing written by it yet
    ex._process(line(100, 2))  # a record the old life had in flight at the cut, landed late
    assert ex.stats.counters["fenced_tuples"] == 1 and ex.by_partition[0].next_offset == 3
    task = ex.by_partition[0]
    task.committed_offset = task.flushed_offset = 3
    ex._write_progress()
    ((topic, value, key),) = [s for s in sent if s[0].endswith("__progress")]
    assert key == b"split:%d:900" % task.task_id
    last = decode_progress(value, component="split", topic=topic, partition=0, offset=0)
    assert last.fence == ((0, 200, 1),)  # the newest life before its commit (the older one can matter to no later start)

    # The reader's next life starts at 3, past the marker; another late record of the old life lands at 3.
    again, _ = bolt("split", epoch=1000)
    monkeypatch.setattr(bolt_module, "read_progress", lambda *a, **k: TaskLives({task.task_id: last}, [b"split:%d:100" % task.task_id]))
    monkeypatch.setattr(bolt_module, "committed_with_metadata", lambda *a, **k: {0: (3, "")})
    again.start_offsets = again._start_offsets(None, [])
    again._reexecution_windows()
    again._process(line(100, 3))
    again._process(line(200, 4))
    assert again.stats.counters.get("fenced_tuples") == 1 and again.fence.highest_of(0, 0) == 200


def test_a_new_life_marks_every_partition_it_may_write_and_waits_for_the_broker() -> None:
    ex, _ = bolt("split", epoch=700)
    topology = ex.topology
    produced: list[tuple[str, int, bytes, Any]] = []

    class Producer:
        def __init__(self) -> None:
            self.callbacks: list[Any] = []

        def produce(self, topic: str, value: bytes, partition: int, headers: Any, on_delivery: Any) -> None:
            produced.append((topic, partition, value, headers))
            self.callbacks.append(on_delivery)

        def flush(self, timeout: float) -> int:
            for i, cb in enumerate(self.callbacks):
                cb("broker away" if i == 0 and len(produced) == len(self.callbacks) else None, None)  # the first try loses one
            self.callbacks = []
            return 0

    ex.producer = Producer()
    ex.tasks = (0, 1)
    ex._mark_epoch()
    count = topology.components["count"]
    split = topology.components["split"]
    conf = resolve(topology.conf)
    tuples = [(t, p, decode_marker(v)) for t, p, v, _ in produced if t == component_topic(topology.name, "count")]
    assert sorted({(t, p) for t, p, _ in tuples}) == [(component_topic(topology.name, "count"), p) for p in range(count.num_tasks)]
    assert all(m == ("split", [split.task_base, split.task_base + 1], 700) for _, _, m in tuples)
    acks = [(p, v, read_from(h)) for t, p, v, h in produced if t == acker_topic(topology.name)]
    assert sorted({p for p, _, _ in acks}) == list(range(conf.ackers)) and {(v, o) for _, v, o in acks} == {(b"[]", (split.task_base, 700))}
    assert len(produced) == count.num_tasks + conf.ackers + 1  # the one lost was sent again
