"""Trees of several records (``squall.spout.tree.records``): one root, one init, one result.

The collector half drives the real :class:`SpoutOutputCollectorImpl` and bolt collectors into the
real acker :class:`Ledger`; the spout half drives a real :class:`KafkaSpout` with stand-in
records and a recording collector; the ledger and trees-in-flight halves are pure.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from acker.ledger import Ledger
from streams import KafkaSpout, RecordTranslator, TopologyBuilder, TopologyContext
from streams.config import resolve
from streams.kafka.fetch_gaps import FakeRecord as Msg  # a stand-in for a consumed confluent_kafka.Message
from streams.kafka.source import KafkaMessageId, KafkaRecordsId, SourceIO
from streams.monitoring.spout_ledger import TaskLedger
from streams.runtime.acks import AckBuffer
from streams.runtime.collectors import SpoutOutputCollectorImpl
from streams.runtime.inflight import InFlightTrees
from tests.unit.sim import Capture, OneRoute, apply_ops, as_tuple, collector


def spout_collector(cap: Capture, acks: AckBuffer | None, tracked: list[Any], untracked: list[Any]) -> SpoutOutputCollectorImpl:
    return SpoutOutputCollectorImpl(
        OneRoute(),  # type: ignore[arg-type]
        0,
        cap,
        acks,
        lambda root, msg_id, weight: tracked.append((root, msg_id, weight)),
        lambda msg_id, weight: untracked.append((msg_id, weight)),
    )


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 30),
    order=st.randoms(use_true_random=False),
    held=st.integers(0, 30),
    fail=st.booleans(),
)
def test_a_tree_of_records_completes_only_when_every_tuple_is_acked(n: int, order: Any, held: int, fail: bool) -> None:
    """One init for ``n`` tuples; the acker completes the tree only after the last of them is
    acked (in any order, coalesced per flush), and a failed tuple fails the whole tree."""
    cap, acks, tracked, untracked = Capture(), AckBuffer("acker", 1), [], []  # type: ignore[var-annotated]
    spout = spout_collector(cap, acks, tracked, untracked)
    rid = KafkaRecordsId("t", 0, tuple(range(10, 10 + n)))
    spout.emit_tree([("default", [f"line {i}"]) for i in range(n)], rid)
    ops = [op for part in acks.drain().values() for op in part]
    assert [op[0] for op in ops] == [0] and len(cap.records) == n and spout.emitted == n
    root = ops[0][1]
    assert tracked == [(root, rid, n)] and untracked == []
    children = [as_tuple(raw) for _, raw in cap.records]
    assert all(set(c.anchors) == {root} for c in children)
    ledger = Ledger(30)
    apply_ops(ledger, ops)
    bolt_acks = AckBuffer("acker", 1)
    bolt = collector(Capture(), bolt_acks)
    order.shuffle(children)
    held = min(held, n - 1) if not fail else held % n
    outs: list[Any] = []
    for i, child in enumerate(children):
        if i == held:
            continue  # acked last (or failed)
        bolt.ack(child)
        if i % 3 == 0:  # several flushes
            outs += apply_ops(ledger, [op for part in bolt_acks.drain().values() for op in part])
    outs += apply_ops(ledger, [op for part in bolt_acks.drain().values() for op in part])
    assert outs == []  # one tuple is still out
    (bolt.fail if fail else bolt.ack)(children[held])
    outs = apply_ops(ledger, [op for part in bolt_acks.drain().values() for op in part])
    assert [(o.root, o.acked) for o in outs] == [(root, not fail)]


def test_without_ackers_a_tree_of_records_is_acked_at_once_with_its_weight() -> None:
    cap, tracked, untracked = Capture(), [], []  # type: ignore[var-annotated]
    spout = spout_collector(cap, None, tracked, untracked)
    rid = KafkaRecordsId("t", 0, (1, 2, 3))
    spout.emit_tree([("default", ["a"]), ("default", ["b"]), ("default", ["c"])], rid)
    assert len(cap.records) == 3 and tracked == [] and untracked == [(rid, 3)]
    assert all(as_tuple(raw).anchors == {} for _, raw in cap.records)


class Recorder:
    """Records what the spout emits: ``("one", msg_id, values)`` or ``("tree", msg_id, [values])``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, Any]] = []

    def emit(self, values: list[Any], msg_id: Any = None, stream: str = "default") -> list[int]:
        self.calls.append(("one", msg_id, values))
        return [0]

    def emit_tree(self, tuples: list[tuple[str, list[Any]]], msg_id: Any) -> list[int]:
        self.calls.append(("tree", msg_id, [v for _, v in tuples]))
        return [0] * len(tuples)


class Poison(RecordTranslator):
    def translate(self, msg: Any) -> tuple[str, list[Any]] | None:
        if msg.value() == b"poison":
            raise ValueError("cannot parse")
        return super().translate(msg)


def open_spout(tree_records: int, max_retries: int = 5) -> tuple[KafkaSpout, Recorder, list[Any]]:
    spout = KafkaSpout(translator=Poison())
    rec, letters = Recorder(), []
    config = resolve({"squall.spout.tree.records": tree_records, "squall.spout.max.retries": max_retries})
    builder = TopologyBuilder()
    builder.set_spout("lines", spout)
    context = TopologyContext(builder.create_topology("trees"), "lines", 0, config=config)
    spout.open(config.as_dict(), context, rec)  # type: ignore[arg-type]
    spout.bind(SourceIO(lambda msg, reason, attempts, details: letters.append((msg.offset(), reason, attempts))))
    return spout, rec, letters


def test_kafka_spout_sends_a_run_of_one_partition_per_tree() -> None:
    spout, rec, _ = open_spout(tree_records=3)
    a = [Msg("t", 0, off, f"a{off}".encode()) for off in range(5)]
    b = [Msg("t", 1, off, f"b{off}".encode()) for off in range(2)]
    spout.on_records(a + b + [Msg("t", 0, 5, b"a5")])
    for _ in range(5):
        spout.next_tuple()
    assert [(kind, mid) for kind, mid, _ in rec.calls] == [
        ("tree", KafkaRecordsId("t", 0, (0, 1, 2))),
        ("tree", KafkaRecordsId("t", 0, (3, 4))),
        ("tree", KafkaRecordsId("t", 1, (0, 1))),
        ("one", KafkaMessageId("t", 0, 5)),  # a run of one keeps the plain message id
    ]
    assert rec.calls[0][2] == [["a0"], ["a1"], ["a2"]]
    spout.next_tuple()
    assert len(rec.calls) == 4  # nothing left
    spout.ack(KafkaRecordsId("t", 0, (3, 4)))
    assert spout.committable()[("t", 0)] == 0  # 0..2 still in flight: nothing contiguous
    spout.ack(KafkaRecordsId("t", 0, (0, 1, 2)))
    spout.ack(KafkaMessageId("t", 0, 5))
    assert spout.committable() == {("t", 0): 6, ("t", 1): 0}


def test_a_failed_tree_replays_each_record_alone_and_a_bad_one_is_dead_lettered_alone() -> None:
    spout, rec, letters = open_spout(tree_records=10, max_retries=1)
    spout.on_records([Msg("t", 0, off, f"r{off}".encode()) for off in range(4)])
    spout.next_tuple()
    rid = rec.calls[0][1]
    assert rid == KafkaRecordsId("t", 0, (0, 1, 2, 3))
    spout.fail(rid)  # one of its tuples failed somewhere
    for _ in range(4):
        spout.next_tuple()
    replays = rec.calls[1:]
    assert [(kind, mid) for kind, mid, _ in replays] == [("one", KafkaMessageId("t", 0, off)) for off in range(4)]
    for off in (0, 1, 3):
        spout.ack(KafkaMessageId("t", 0, off))
    spout.fail(KafkaMessageId("t", 0, 2))  # offset 2 fails again: out of retries
    assert [(off, attempts) for off, _, attempts in letters] == [(2, 2)]
    assert "[lines] gave up after 2 failures" in letters[0][1]
    assert spout.committable() == {("t", 0): 4} and spout.counters.dead_lettered == 1


def test_a_dead_letter_says_the_last_cause_when_the_record_first_and_last_failed_and_its_roots() -> None:
    spout, _, _ = open_spout(tree_records=1, max_retries=1)
    headers: list[dict[str, str]] = []
    spout.bind(SourceIO(lambda msg, reason, attempts, details: headers.append({"reason": reason, **details})))
    now = iter([100.0, 107.5])
    spout.wall = lambda: next(now)
    spout.on_records([Msg("t", 0, 0, b"r0")])
    spout.next_tuple()
    mid = KafkaMessageId("t", 0, 0)
    spout.note_failure(mid, "fail", 11)  # what SpoutTasks tells it before fail()
    spout.fail(mid)
    spout.next_tuple()
    spout.note_failure(mid, "timeout", 12, "[lines] no ack within the message timeout of 30 s")
    spout.fail(mid)
    assert headers == [
        {
            "reason": "[lines] gave up after 2 failures (the last: timeout: [lines] no ack within the message timeout of 30 s)",
            "cause": "timeout",
            "why": "[lines] no ack within the message timeout of 30 s",
            "first.failure": "100.000",
            "last.failure": "107.500",
            "root": "12",
            "roots": "11,12",
        }
    ]


def test_a_poison_record_inside_a_run_is_dead_lettered_and_the_rest_is_one_tree() -> None:
    spout, rec, letters = open_spout(tree_records=10)
    spout.on_records([Msg("t", 0, 0, b"x"), Msg("t", 0, 1, b"poison"), Msg("t", 0, 2, b"y")])
    spout.next_tuple()
    assert [(kind, mid) for kind, mid, _ in rec.calls] == [("tree", KafkaRecordsId("t", 0, (0, 2)))]
    assert [off for off, _, _ in letters] == [1] and spout.counters.poison == 1
    assert "[lines] cannot decode record t[0]@1" in letters[0][1]
    spout.ack(KafkaRecordsId("t", 0, (0, 2)))
    assert spout.committable() == {("t", 0): 3}


def test_the_ledger_counts_each_record_of_a_tree() -> None:
    ledger = TaskLedger("lines", 0)
    first = KafkaRecordsId("t", 0, (0, 1, 2, 3))
    ledger.emitted_tracked(first)
    assert ledger.high == {"t[0]": 4} and sum(ledger.replayed.values()) == 0
    ledger.failed_tree(first, "timeout")
    assert (ledger.failed, ledger.timeouts) == (4, 4)
    for mid in first.members():  # replayed one by one
        ledger.emitted_tracked(mid)
    assert ledger.replayed == {"fail": 0, "timeout": 4, "restart": 0}
    ledger.acked_tree(4)
    nxt = TaskLedger.from_json(ledger.to_json()).next_life()
    nxt.emitted_tracked(KafkaRecordsId("t", 0, (2, 3, 4, 5)))  # a new life re-reads from offset 2
    assert nxt.replayed["restart"] == 2 and nxt.high == {"t[0]": 6}


def test_trees_in_flight_count_their_message_ids_towards_the_bound() -> None:
    now = [0.0]
    trees = InFlightTrees(lambda: now[0])
    trees.track(1, 0, KafkaRecordsId("t", 0, (0, 1, 2)), weight=3)
    trees.track(2, 0, KafkaMessageId("t", 0, 3))
    assert trees.pending(0) == 4 and len(trees) == 2
    settled = trees.settle(1)
    assert settled is not None and settled.weight == 3 and trees.pending(0) == 1
    now[0] = 60.0
    assert [t.weight for t in trees.expired(30.0)] == [1] and trees.pending(0) == 0


def test_tree_size_adapts_to_failures_as_aimd() -> None:
    """A failed tree halves the partition's tree size; each acked tree adds one, back up to
    ``squall.spout.tree.records``: a bolt that fails often soon gets small trees, so few
    tree-mates of a failing tuple are replayed."""
    spout, rec, _ = open_spout(tree_records=8)
    spout.on_records([Msg("t", 0, off, f"r{off}".encode()) for off in range(40)])
    spout.next_tuple()
    first = rec.calls[-1][1]
    assert first.size == 8
    spout.fail(first)
    assert spout.tree_size[("t", 0)] == 4
    sizes = []  # (the failed tree's replays are not due yet: they wait out the backoff)
    for _ in range(30):
        before = len(rec.calls)
        spout.next_tuple()
        if len(rec.calls) > before and rec.calls[-1][0] == "tree":
            mid = rec.calls[-1][1]
            sizes.append(mid.size)
            spout.ack(mid)
    assert sizes == [4, 5, 6, 7, 8, 2]  # +1 per acked tree, up to 8; then the 2 records left


@settings(max_examples=150, deadline=None)
@given(
    runs=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 12)), min_size=1, max_size=12),
    kinds=st.lists(st.sampled_from(["ok", "ok", "ok", "poison", "header"]), min_size=1, max_size=50),
    tree_records=st.integers(1, 8),
)
def test_runs_of_any_shape_emit_every_good_record_once_and_commit_to_the_end(runs: list[tuple[int, int]], kinds: list[str], tree_records: int) -> None:
    """Records of three partitions arrive in interleaved runs; some are poison (dead-lettered),
    some translate to nothing (skipped). Every good record is in exactly one tree (or a plain
    message id), a tree holds one partition's records in offset order and at most
    ``tree_records`` of them, and once every tree is acked each partition commits to its end."""

    class Headers(Poison):
        def translate(self, msg: Any) -> tuple[str, list[Any]] | None:
            return None if msg.value() == b"header" else super().translate(msg)

    spout, rec, letters = open_spout(tree_records)
    spout.translator = Headers()
    next_off = [0, 0, 0]
    good: set[tuple[int, int]] = set()
    i = 0
    for partition, n in runs:
        batch = []
        for _ in range(n):
            kind = kinds[i % len(kinds)]
            i += 1
            off = next_off[partition]
            next_off[partition] += 1
            batch.append(Msg("t", partition, off, kind.encode() if kind != "ok" else f"p{partition}o{off}".encode()))
            if kind == "ok":
                good.add((partition, off))
        spout.on_records(batch)
    while spout.buffered:
        spout.next_tuple()
    emitted: list[tuple[int, int]] = []
    for kind, mid, values in rec.calls:
        offsets = mid.offsets if kind == "tree" else (mid.offset,)
        assert len(offsets) <= tree_records and list(offsets) == sorted(offsets)
        assert [v[0] for v in (values if kind == "tree" else [values])] == [f"p{mid.partition}o{o}" for o in offsets]
        emitted += [(mid.partition, o) for o in offsets]
        spout.ack(mid)
    assert sorted(emitted) == sorted(good) and len(emitted) == len(good)  # each good record once
    assert len(letters) == i - len(good) - sum(1 for k in (kinds[j % len(kinds)] for j in range(i)) if k == "header")
    assert spout.committable() == {("t", p): n for p, n in enumerate(next_off) if n}


def test_a_record_handed_twice_is_emitted_once_and_a_failed_tree_s_dead_letter_says_why() -> None:
    spout, rec, letters = open_spout(tree_records=10, max_retries=0)
    spout.on_records([Msg("t", 0, off, f"r{off}".encode()) for off in (0, 1, 2, 1, 2, 3)])  # 1 and 2 again
    spout.next_tuple()
    spout.next_tuple()
    rid = KafkaRecordsId("t", 0, (0, 1, 2, 3))
    assert [(kind, mid) for kind, mid, _ in rec.calls] == [("tree", rid)]
    spout.note_failure(rid, "timeout", 77, "[lines] no ack within the message timeout of 30 s")
    spout.fail(rid)  # no retries: each record is dead-lettered alone, saying why
    assert [(off, attempts) for off, _, attempts in letters] == [(0, 1), (1, 1), (2, 1), (3, 1)]
    assert all("(the last: timeout: [lines] no ack within the message timeout of 30 s)" in reason for _, reason, _ in letters)
    assert spout.committable() == {("t", 0): 4} and spout.counters.dead_lettered == 4
