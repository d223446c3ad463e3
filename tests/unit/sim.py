"""A broker-free harness that drives the real collectors into the real ledger."""

from __future__ import annotations

from typing import Any

from acker.ledger import Ledger
from streams import Tuple
from streams.model.grouping import GlobalGrouping
from streams.runtime.acks import AckBuffer
from streams.runtime.collectors import BoltOutputCollectorImpl
from streams.runtime.routing import Route
from streams.wire.acker import OP_ACK, OP_FAIL, OP_INIT, OP_RESET
from streams.wire.codec import decode_tuple


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


def collector(capture: Capture, acks: AckBuffer, tuple_ids: bool = False) -> BoltOutputCollectorImpl:
    return BoltOutputCollectorImpl(OneRoute(tuple_ids), 1, capture, acks)  # type: ignore[arg-type]
