"""Fencing a replaced worker's late writes: the sender's epoch, checked by the bolt executors and the acker that read them.

A record from an older life of a task that arrives after its newer life wrote to the same
partition is dropped, counted and (a tuple) failed; a normal handover, where the old life's
records all come first, drops nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from acker.durable import DurableLedger
from acker.ledger import Ledger
from acker.runtime_native import AckerExecutor
from service.control.claims import ClaimBook
from streams.config import resolve
from streams.model.loader import load_topology
from streams.monitoring.progress_store import TaskLives
from streams.runtime.bolt import BoltExecutor
from streams.runtime.executor import ExecutorEnv
from streams.runtime.fencing import EpochFence
from streams.testing.memlog import Record
from streams.wire.acker import OP_ACK, OP_INIT, encode_ops, from_header
from streams.wire.codec import Envelope, decode_tuples, encode_head, encode_rooted, encode_run, encode_values
from streams.wire.naming import acker_topic

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

records = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(1, 5)), max_size=60)
"""``(partition, sender, epoch)`` in the order one reader reads them."""


@settings(max_examples=300, deadline=None)
@given(records)
def test_a_record_is_fenced_exactly_when_a_newer_life_of_its_sender_wrote_to_its_partition_before(seq: list[tuple[int, int, int]]) -> None:
    fence = EpochFence()
    for i, (p, sender, epoch) in enumerate(seq):
        before = [e for q, s, e in seq[:i] if (q, s) == (p, sender)]
        assert fence.admit(p, sender, epoch) == (not before or epoch >= max(before))
    assert fence.dropped == sum(1 for i, (p, s, e) in enumerate(seq) if any((q, t) == (p, s) and f > e for q, t, f in seq[:i]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), max_size=40), st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), max_size=40))
def test_a_normal_handover_drops_nothing(old: list[tuple[int, int]], new: list[tuple[int, int]]) -> None:
    """The old life drained before the new one started: in every partition its records come first."""
    fence = EpochFence()
    assert all(fence.admit(p, s, 100) for p, s in old) and all(fence.admit(p, s, 200) for p, s in new)
    assert fence.dropped == 0


def test_claim_epochs_grow_for_every_later_owner_of_a_task_even_when_the_clock_goes_back() -> None:
    book = ClaimBook()
    first = book.next_epoch("wc", [("count", 0), ("count", 1)], now_ms=10_000)
    book.apply(
        {"event": "started", "topology": "wc", "worker": 0, "supervisor": "h1", "pid": 7, "tasks": [["count", 0], ["count", 1]], "at": 10.0, "epoch": first}
    )
    second = book.next_epoch("wc", [("count", 1)], now_ms=9_000)  # another host, its clock 1 s behind
    assert (first, second) == (10_000, 10_001)
    book.apply({"event": "started", "topology": "wc", "worker": 1, "supervisor": "h2", "pid": 9, "tasks": [["count", 1]], "at": 9.0, "epoch": second})
    assert book.next_epoch("wc", [("count", 0)], now_ms=9_500) == 10_001 and book.next_epoch("wc", [("count", 1)], now_ms=20_000) == 20_000
    assert book.next_epoch("other", [("count", 1)], now_ms=1) == 1  # per topology


class Committer:
    """A consumer's ``commit``, recorded: ``[(topic, partition, offset, metadata), ...]`` per call."""

    def __init__(self) -> None:
        self.commits: list[list[tuple[str, int, int, str | None]]] = []

    def commit(self, offsets: list[TopicPartition], asynchronous: bool = True) -> None:
        self.commits.append([(tp.topic, tp.partition, tp.offset, tp.metadata) for tp in offsets])


def bolt(component: str) -> tuple[BoltExecutor, list[tuple[str, bytes]]]:
    topology = load_topology(EXAMPLES / "wordcount.py", "fencing")
    ex = BoltExecutor(
        ExecutorEnv(topology=topology, component=component, conf=resolve(topology.conf), bootstrap="127.0.0.1:1", workdir=Path("/tmp"), epoch=500)
    )
    sent: list[tuple[str, bytes]] = []
    ex.produce = ex.transfer.send = lambda topic, value, key=None, partition=-1, **kw: sent.append((topic, value))
    ex.by_partition[0] = ex._new_task(0)
    return ex, sent


def envelopes(sent: list[tuple[str, bytes]]) -> list[Envelope]:
    """Every tuple in ``sent``, one record's or a pack's."""
    return [e for _, v in sent for e in decode_tuples(v, component="t", topic="t", partition=0, offset=0)]


def test_a_bolt_drops_counts_and_fails_a_tuple_its_senders_older_life_wrote_after_the_newer_one() -> None:
    ex, sent = bolt("split")

    def line(epoch: int, text: str, root: int, off: int) -> Record:
        return Record(ex.topic, 0, off, encode_rooted("default", "lines", 0, epoch, [text], root, 77))

    ex._process(line(100, "old life", 1, 0))  # the old owner, before its successor wrote here: taken
    ex._process(line(200, "new life", 2, 1))
    ex._process(line(100, "zombie", 3, 2))  # the old owner again, after: fenced
    ex._process(line(200, "new again", 4, 3))
    ex.transfer.flush()  # the end of the round: its packs leave
    words = [e[4][0] for e in envelopes(sent)]
    assert sorted(words) == sorted(["old", "life", "new", "life", "new", "again"])  # in packs: in order per partition, not across
    assert ex.stats.counters["fenced_tuples"] == 1 and ex.by_partition[0].next_offset == 4
    assert ex.acks is not None
    fails = dict(ex.acks.fails)
    assert list(fails) == [3] and "fenced" in fails[3] and "[split]" in fails[3]  # its tree is replayed now, not at the timeout
    assert {e[3] for e in envelopes(sent)} == {500}  # what it sends carries its own epoch


def test_an_acker_drops_and_counts_a_record_its_senders_older_life_flushed_after_the_newer_one() -> None:
    topology = load_topology(EXAMPLES / "wordcount.py", "fencing")
    acker = AckerExecutor(ExecutorEnv(topology=topology, component="__acker", conf=resolve(topology.conf), bootstrap="127.0.0.1:1", workdir=Path("/tmp")))
    acker.ledgers[0] = DurableLedger(Ledger(30.0, clock=lambda: 0.0))
    topic = acker_topic(topology.name)
    acker._apply(Record(topic, 0, 0, encode_ops([[OP_INIT, 11, 5, 0]]), headers=from_header(0, 200)))
    acker._apply(Record(topic, 0, 1, encode_ops([[OP_INIT, 12, 5, 0], [OP_ACK, 11, 5]]), headers=from_header(0, 100)))  # late, older life
    acker._apply(Record(topic, 0, 2, encode_ops([[OP_ACK, 11, 5]]), headers=from_header(0, 200)))
    assert acker.stats.counters["fenced_acker_ops"] == 2 and acker.stats.counters["fenced_acker_records"] == 1
    assert acker.next_offset[0] == 3
    assert len(acker.ledgers[0].ledger) == 0  # 11 completed once; the fenced init of 12 never opened a tree
    results = [op for items in acker.results.values() for op in items]
    assert [r[:2] for r in results] == [[0, 11]]


def test_a_bolt_starts_past_a_replaced_owners_late_commit_and_counts_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Task 0's last life (epoch 300) had its commit of 53000 confirmed; then a replaced owner's commit of 7736 (epoch 100) landed.
    Task 1's committed offset is its last life's own: it stands."""
    import streams.runtime.bolt as bolt_module
    from streams.monitoring.bolt_progress import Progress
    from streams.wire.commits import commit_metadata

    ex, _ = bolt("count")
    base = ex.cdef.task_base
    monkeypatch.setattr(
        bolt_module, "read_progress", lambda *a, **k: TaskLives({base: Progress(53284, "h1", 300, 53000), base + 1: Progress(900, "h1", 300, 880)}, [])
    )
    monkeypatch.setattr(bolt_module, "committed_with_metadata", lambda *a, **k: {0: (7736, commit_metadata(100)), 1: (880, commit_metadata(300))})
    group = Committer()
    assert ex._start_offsets(group, []) == {0: 53000, 1: 880}
    assert ex.stats.counters["fenced_commits"] == 1
    assert group.commits == [[(ex.topic, 0, 53000, commit_metadata(500))]]  # the group's offset is set right at once (status, lag)
    assert ex.commit_meta == commit_metadata(500)  # its own commits name its epoch


def test_an_acker_starts_past_a_replaced_owners_late_commit_and_records_where_it_started(monkeypatch: pytest.MonkeyPatch) -> None:
    import acker.runtime_native as acker_module
    from streams.monitoring.bolt_progress import Progress, decode_progress
    from streams.wire.commits import commit_metadata

    topology = load_topology(EXAMPLES / "wordcount.py", "fencing")
    acker = AckerExecutor(
        ExecutorEnv(topology=topology, component="__acker", conf=resolve(topology.conf), bootstrap="127.0.0.1:1", workdir=Path("/tmp"), epoch=500)
    )
    monkeypatch.setattr(acker_module, "restored_ledger", lambda *a, **k: DurableLedger(Ledger(30.0, clock=lambda: 0.0)))
    monkeypatch.setattr(acker_module, "read_progress", lambda *a, **k: TaskLives({0: Progress(900, "h1", 300, 900)}, []))
    monkeypatch.setattr(acker_module, "committed_with_metadata", lambda *a, **k: {0: (120, commit_metadata(100))})
    group = Committer()
    acker._open_tasks(group, [TopicPartition(acker.topic, 0)])
    assert acker.committed == {0: 900} and acker.next_offset == {0: 900} and acker.stats.counters["fenced_commits"] == 1
    assert group.commits == [[(acker.topic, 0, 900, commit_metadata(500))]]
    sent: list[tuple[str, bytes, bytes | None]] = []
    acker.produce = lambda topic, value, key=None, partition=-1, **kw: sent.append((topic, value, key))
    acker._flush(None)
    progress = [(k, decode_progress(v, component="t", topic=t, partition=0, offset=0)) for t, v, k in sent if t.endswith("__progress")]
    assert progress == [(b"__acker:0:500", Progress(900, acker.place, 500, 900))]  # the next life starts past a late commit too


def test_in_one_pack_the_fence_judges_each_run_by_its_own_sender_and_life() -> None:
    """The bolt asks the fence once per run of one sender's life, not once per tuple: a pack whose runs
    come from a newer life, an older life of the same task and another task fences exactly the older life's."""
    ex, sent = bolt("split")
    ex._process(Record(ex.topic, 0, 0, encode_rooted("default", "lines", 0, 200, ["new"], 1, 77)))

    def run(task: int, epoch: int, root: int, texts: list[str]) -> bytes:
        return encode_run(encode_head("default", "lines", task, epoch), root, 88, [encode_values([t]) for t in texts])

    pack = b"[6," + b",".join([run(0, 200, 2, ["a", "b"]), run(0, 100, 3, ["zombie", "again"]), run(1, 100, 4, ["other"])]) + b"]"
    ex._process(Record(ex.topic, 0, 1, pack))
    ex.transfer.flush()
    assert sorted(e[4][0] for e in envelopes(sent)) == ["a", "b", "new", "other"]
    assert ex.stats.counters["fenced_tuples"] == 2 and ex.by_partition[0].next_offset == 2
    assert ex.acks is not None and list(dict(ex.acks.fails)) == [3]
