"""The collector algebra against Storm's: anchoring, multi-anchoring, coalescing, unanchored."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from acker.ledger import Ledger
from streams import Tuple
from streams.model.grouping import AllGrouping, FieldsGrouping, GlobalGrouping
from streams.monitoring.trace import Tracer
from streams.runtime.acks import AckBuffer
from streams.runtime.collectors import BoltOutputCollectorImpl
from streams.runtime.routing import Output, Route
from streams.runtime.transfer import TupleTransfer
from streams.wire.acker import acker_partition
from streams.wire.codec import RunAnchors
from tests.unit.sim import Capture, apply_ops, as_tuple, collector


def spout_tuple(root: int, edge: int) -> Tuple:
    return Tuple(["a"], "default", "s", 0, {root: edge}, {"v": 0})


def test_anchored_emit_xors_edge_into_anchor_and_child() -> None:
    cap, acks = Capture(), AckBuffer("acker", 1)
    coll = collector(cap, acks)
    parent = spout_tuple(11, 0b0100)
    coll.emit(["b"], anchors=parent)
    child = as_tuple(cap.records[0][1])
    edge = child.anchors[11]
    assert parent.ack_val == edge != 0
    coll.ack(parent)
    assert acks.acks == {11: 0b0100 ^ edge}


def test_multi_anchoring_joins_two_trees() -> None:
    cap, acks = Capture(), AckBuffer("acker", 1)
    coll = collector(cap, acks)
    left, right = spout_tuple(1, 0b01), spout_tuple(2, 0b10)
    coll.emit(["joined"], anchors=[left, right])
    child = as_tuple(cap.records[0][1])
    assert set(child.anchors) == {1, 2}
    ledger = Ledger(30)
    apply_ops(ledger, [[0, 1, 0b01, 0], [0, 2, 0b10, 0]])
    coll.ack(left)
    coll.ack(right)
    outs = apply_ops(ledger, [op for ops in acks.drain().values() for op in ops])
    assert outs == []  # the joined child is still pending in both trees
    coll.fail(child)
    outs = apply_ops(ledger, [op for ops in acks.drain().values() for op in ops])
    assert sorted((o.root, o.acked) for o in outs) == [(1, False), (2, False)]


def test_acks_for_one_root_coalesce_into_one_op_per_flush() -> None:
    cap, acks = Capture(), AckBuffer("acker", 4)
    coll = collector(cap, acks)
    parent = spout_tuple(99, 0b1000)
    for _ in range(5):
        coll.emit(["w"], anchors=parent)
    children = [as_tuple(raw) for _, raw in cap.records]
    coll.ack(parent)
    for c in children:
        coll.ack(c)
    drained = acks.drain()
    ops = [op for part in drained.values() for op in part]
    assert ops == [[1, 99, 0b1000]]  # one op; XOR of everything
    assert list(drained) == [acker_partition(99, 4)]


def test_unanchored_emit_is_untracked() -> None:
    cap, acks = Capture(), AckBuffer("acker", 1)
    coll = collector(cap, acks)
    parent = spout_tuple(5, 7)
    coll.emit(["free"], anchors=None)
    assert as_tuple(cap.records[0][1]).anchors == {}
    assert parent.ack_val == 0


def test_fail_drops_pending_acks_for_that_root() -> None:
    cap, acks = Capture(), AckBuffer("acker", 1)
    coll = collector(cap, acks)
    a, b = spout_tuple(5, 7), spout_tuple(5, 9)
    coll.ack(a)
    coll.fail(b)
    assert [op for ops in acks.drain().values() for op in ops] == [[2, 5, "[b] fail"]]  # a silent fail still names its component


def test_a_large_flush_is_split_into_bounded_records() -> None:
    from streams.wire.acker import MAX_ITEMS_PER_RECORD

    acks = AckBuffer("acker", 1, sender=4, epoch=1234)
    for root in range(1, 10_001):
        acks.ack(root, root)
    records: list[bytes] = []
    sent_headers: list[object] = []

    def produce(topic: str, value: bytes, partition: int = -1, headers: object = None) -> None:
        records.append(value)
        sent_headers.append(headers)

    assert acks.flush(produce) == 10_000
    assert len(records) == 3 and all(len(r) < 400_000 for r in records)
    assert sent_headers == [[("squall.from", b"4:1234")]] * 3  # every record names its sender and epoch (streams.runtime.fencing)
    import json

    assert sum(len(json.loads(r)) for r in records) == 10_000 and max(len(json.loads(r)) for r in records) == MAX_ITEMS_PER_RECORD


def test_ids_do_not_depend_on_the_global_random_state() -> None:
    import random

    cap = Capture()
    coll = collector(cap, AckBuffer("acker", 1))
    random.seed(42)
    coll.emit(["a"], anchors=spout_tuple(1, 2))
    random.seed(42)
    coll.emit(["a"], anchors=spout_tuple(1, 2))
    first, second = (as_tuple(raw).anchors[1] for _, raw in cap.records)
    assert first != second  # a user seeding random cannot make edge ids collide


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 2**64 - 1), st.integers(1, 64))
def test_acker_partition_is_kafkas_murmur2_of_the_8_byte_key(root: int, ackers: int) -> None:
    """The unrolled hash equals the Java client's murmur2 of the key (as Kafka's default
    partitioner would place a keyed record), and one acker needs no hash at all."""
    from streams.wire.acker import murmur2, murmur2_root

    assert murmur2_root(root) == murmur2(root.to_bytes(8, "big"))
    assert acker_partition(root, ackers) == (murmur2(root.to_bytes(8, "big")) & 0x7FFFFFFF) % ackers


class Streams:
    """Router stand-in with the stream shapes :meth:`BoltOutputCollectorImpl.emit` tells apart: one route to 3 tasks by
    field (its hot path), one to every task of 2 (all grouping), two routes, and a stream with an output topic."""

    component = "b"
    tuple_ids = False

    def __init__(self) -> None:
        def route(n: int, grouping: Any, target: str = "c") -> Route:
            return Route(target, "t-" + target, n, 10, grouping, False)

        self.routes = {
            "default": [route(3, FieldsGrouping(3, [0]))],
            "all": [route(2, AllGrouping(2))],
            "two": [route(3, FieldsGrouping(3, [0])), route(1, GlobalGrouping(), "d")],
            "out": [route(3, FieldsGrouping(3, [0]))],
            "sink": [],
        }
        self.direct = dict.fromkeys(self.routes, False)
        self.outputs: dict[str, list[Any]] = {s: [] for s in self.routes}
        self.outputs["out"] = [Output("squall.x.out", 0, ("w",))]
        self.outputs["sink"] = [Output("squall.x.sink", 0, ("w",)), Output("squall.x.show", 0, ("w",))]  # read by users only

    def stream(self, stream: str) -> list[Route]:
        return self.routes[stream]


@settings(max_examples=150, deadline=None)
@given(
    emits=st.lists(
        st.tuples(
            st.sampled_from(["default", "all", "two", "out", "sink"]),
            st.sampled_from(["run", "tree", "untracked", "batch", "untracked-batch", "traced", "two-roots", "none"]),
            st.text("abcdef", min_size=1, max_size=3),
        ),
        min_size=1,
        max_size=25,
    ),
    acked=st.booleans(),
)
def test_the_emit_hot_path_sends_and_anchors_what_the_general_path_does(emits: list[tuple[str, str, str]], acked: bool) -> None:
    """Every shape of emit (stream, anchors, batch, tracing, with and without ackers): the same packs, the same
    target tasks, the same ack vals and acker ops as the general path (edge ids drawn alike)."""

    def run(hot: bool) -> tuple[Any, ...]:
        ids = iter(range(1, 10_000))
        with patch("streams.runtime.transfer.new_id", lambda: next(ids)), patch("streams.runtime.collectors.new_id", lambda: next(ids)):
            cap, acks = KeyedCapture(), AckBuffer("acker", 1) if acked else None
            transfer = TupleTransfer(cap, {"t-c", "t-d"}, max_tuples=8)
            c = BoltOutputCollectorImpl(Streams(), 1, transfer.produce, acks)  # type: ignore[arg-type]
            c.runs = transfer
            c.tracer = Tracer("b", "x", 1.0, lambda k, v: None)
            inputs = {kind: anchor_of(kind) for kind in ("run", "tree", "untracked", "batch", "untracked-batch", "traced", "two-roots")}
            tasks = []
            for stream, kind, word in emits:
                anchors = None if kind == "none" else inputs[kind]
                tasks.append((c.emit if hot else c._emit)([word], anchors, stream))
            transfer.flush()
            counts = (c.emitted, c.transferred)
            return cap.records, cap.partitions, cap.keys, tasks, counts, {k: t.ack_val for k, t in inputs.items()}, acks.drain() if acks is not None else None

    assert run(hot=True) == run(hot=False)


class KeyedCapture(Capture):
    """:class:`~tests.unit.sim.Capture` that keeps each record's key too (outputs are keyed)."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[bytes | None] = []

    def __call__(self, topic: str, value: bytes, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
        super().__call__(topic, value, key, partition, headers)
        self.keys.append(key)


def test_an_emit_read_only_by_users_writes_each_output_keyed_by_its_key_fields_text() -> None:
    """A stream with outputs and no subscriber (the word count's ``counts``) takes a path of its own: a JSON
    object of the declared fields per output, keyed by the key field's text, and no task."""
    router = Streams()
    router.outputs["sink"] = [Output("squall.x.sink", 1, ("n", "w"))]
    cap = KeyedCapture()
    c = BoltOutputCollectorImpl(router, 1, cap, None)  # type: ignore[arg-type]
    assert c.emit([3, "to"], stream="sink") == [] and c.emit(["x", 4], stream="sink") == []
    assert cap.records == [("squall.x.sink", b'{"n":3,"w":"to"}'), ("squall.x.sink", b'{"n":"x","w":4}')]
    assert cap.keys == [b"to", b"4"] and c.emitted == 2 and c.transferred == 0


def anchor_of(kind: str) -> Tuple:
    anchors: dict[int, int] = {
        "run": RunAnchors(7, 70, 3),
        "tree": {8: 80},
        "two-roots": {8: 80, 9: 90},
        "batch": {6: 60},
        "traced": {5: 50},
    }.get(kind, {})
    t = Tuple(["x"], "default", "a", 0, anchors, {"w": 0})
    if kind in ("batch", "untracked-batch"):
        t.batch = (3, 1)
    t.traced = kind == "traced"
    return t
