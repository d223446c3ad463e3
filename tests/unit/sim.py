"""A broker-free harness that drives the real collectors into the real ledger."""

from __future__ import annotations

from typing import Any

from acker.ledger import Ledger
from streams import Tuple
from streams.model.grouping import GlobalGrouping
from streams.runtime.acks import AckBuffer
from streams.runtime.collectors import BoltOutputCollectorImpl
from streams.runtime.routing import Route
from streams.runtime.transfer import TupleTransfer
from streams.wire.acker import OP_ACK, OP_FAIL, OP_INIT, OP_RESET
from streams.wire.codec import decode_tuple, decode_tuples


class OneRoute:
    """Router stand-in: every stream goes to one task of one bolt."""

    component = "b"

    def __init__(self, tuple_ids: bool = False) -> None:
        self.tuple_ids = tuple_ids
        self.routes = {"default": [Route("b", "t", 1, 0, GlobalGrouping(), False)]}
        self.outputs: dict[str, list[Any]] = {"default": []}
        self.direct = {"default": False}

    def stream(self, stream: str) -> list[Route]:
        return self.routes[stream]


class Capture:
    def __init__(self) -> None:
        self.records: list[tuple[str, bytes]] = []
        self.partitions: list[int] = []

    def __call__(self, topic: str, value: bytes, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
        self.records.append((topic, value))
        self.partitions.append(partition)


def as_tuple(raw: bytes) -> Tuple:
    stream, source, task, _epoch, values, anchors, _, tid = decode_tuple(raw, component="b", topic="t", partition=0, offset=0)
    t = Tuple(values, stream, source, task, anchors, {"v": 0})
    t.tid = tid
    return t


def as_tuples(raw: bytes) -> list[Tuple]:
    """The tuples of one record (an envelope or a pack of them, runs included), as a bolt reads them."""
    out = []
    for stream, source, task, _epoch, values, anchors, _, tid in decode_tuples(raw, component="b", topic="t", partition=0, offset=0):
        t = Tuple(values, stream, source, task, anchors, {"v": 0})
        t.tid = tid
        out.append(t)
    return out


def bolt_acks(raw_records: list[bytes]) -> list[list[Any]]:
    """The acker ops a bolt sends when it acks every tuple of ``raw_records`` and emits nothing (the real collector's ack)."""
    acks = AckBuffer("acker", 1)
    coll = collector(Capture(), acks)
    for raw in raw_records:
        for t in as_tuples(raw):
            coll.ack(t)
    return [op for ops in acks.drain().values() for op in ops]


def apply_ops(ledger: Ledger, ops: list[list[int]]) -> list[Any]:
    outs = []
    for op in ops:
        if op[0] == OP_INIT:
            out = ledger.init(op[1], op[2], op[3])
        elif op[0] == OP_ACK:
            out = ledger.ack(op[1], op[2])
        elif op[0] == OP_FAIL:
            out = ledger.fail(op[1])
        else:
            assert op[0] == OP_RESET
            ledger.reset_timeout(op[1])
            out = None
        if out is not None:
            outs.append(out)
    return outs


def collector(capture: Capture, acks: AckBuffer, tuple_ids: bool = False, runs: int = 0) -> BoltOutputCollectorImpl:
    """A bolt task's collector sending to ``capture``.

    ``runs`` > 0: through a :class:`TupleTransfer` (flush ``c.runs``) with packs of that many tuples at most.
    """
    if not runs:
        return BoltOutputCollectorImpl(OneRoute(tuple_ids), 1, capture, acks)  # type: ignore[arg-type]
    transfer = TupleTransfer(capture, {"t"}, max_tuples=runs)
    c = BoltOutputCollectorImpl(OneRoute(tuple_ids), 1, transfer.produce, acks)  # type: ignore[arg-type]
    c.runs = transfer
    return c
