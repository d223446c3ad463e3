"""What a kit run observes: every emit with its anchors, each tree's outcomes, dead letters, outputs and sinks.

A mixin of :class:`streams.testing.local.LocalTopology`: it wraps the real collectors' emit
methods (recording, then calling the original) and reads the in-memory log's external topics.
"""

from __future__ import annotations

import json
from typing import Any

from streams.model.spec import Topology
from streams.model.tuple import Tuple
from streams.monitoring.errors import ErrorReport
from streams.runtime.collectors import BoltOutputCollectorImpl, SpoutOutputCollectorImpl
from streams.testing.clock import SimulatedTime
from streams.testing.memlog import MemoryLog, Record
from streams.testing.result import DeadLetter, Emitted, RunResult
from streams.testing.tasks import BoltRun, SpoutRun
from streams.wire.dead_letter import read_dead_letter_headers
from streams.wire.naming import dead_letter_topic, errors_topic


class Observer:
    """Records into :attr:`result_` (see the module docstring)."""

    topology: Topology
    name: str
    log: MemoryLog
    time: SimulatedTime
    result_: RunResult
    roots: dict[int, Any]
    dropped: dict[int, Tuple]
    delays: dict[int, tuple[Tuple, float]]
    delayed: list[tuple[float, BoltRun, Tuple]]
    read_pos: dict[str, int]

    def _emitted(self, e: Emitted) -> None:
        self.result_.emitted.setdefault((e.component, e.stream), []).append(e)

    def _record_spout_emits(self, run: SpoutRun, collector: SpoutOutputCollectorImpl) -> None:
        emit, emit_direct, emit_tree = collector.emit, collector.emit_direct, collector.emit_tree
        comp, task = run.component, run.task_id

        def ids(msg_id: Any) -> tuple[Any, ...]:
            return () if msg_id is None else (msg_id,)

        def rec_emit(values: list[Any], msg_id: Any = None, stream: str = "default") -> list[int]:
            self._emitted(Emitted(comp, task, stream, tuple(values), (), ids(msg_id)))
            return emit(values, msg_id, stream)

        def rec_emit_direct(target: int, values: list[Any], msg_id: Any = None, stream: str = "default") -> None:
            self._emitted(Emitted(comp, task, stream, tuple(values), (), ids(msg_id)))
            emit_direct(target, values, msg_id, stream)

        def rec_emit_tree(tuples: Any, msg_id: Any) -> list[int]:
            for stream, values in tuples:
                self._emitted(Emitted(comp, task, stream, tuple(values), (), ids(msg_id)))
            return emit_tree(tuples, msg_id)

        collector.emit = rec_emit  # type: ignore[method-assign]
        collector.emit_direct = rec_emit_direct  # type: ignore[method-assign,assignment]
        collector.emit_tree = rec_emit_tree  # type: ignore[method-assign]

    def _record_bolt_emits(self, run: BoltRun, collector: BoltOutputCollectorImpl) -> None:
        emit, emit_direct, ack = collector.emit, collector.emit_direct, collector.ack
        comp, task = run.component, run.task_id

        last: list[Any] = [(), (), ()]  # the last large anchor list, its anchors' values and their message ids

        def described(anchors: Any, stream: str, values: list[Any]) -> Emitted:
            tuples: tuple[Tuple, ...] = () if anchors is None else (anchors,) if isinstance(anchors, Tuple) else tuple(anchors)
            if len(tuples) > 8 and tuples == last[0]:  # a window's emits share its anchors: described once, not per emit
                return Emitted(comp, task, stream, tuple(values), last[1], last[2])
            mids = tuple(dict.fromkeys(self.roots[r] for a in tuples for r in a.anchors if r in self.roots))
            anchor_values = tuple(tuple(a.values) for a in tuples)
            if len(tuples) > 8:
                last[:] = [tuples, anchor_values, mids]
            return Emitted(comp, task, stream, tuple(values), anchor_values, mids)

        def rec_emit(values: list[Any], anchors: Any = None, stream: str = "default") -> list[int]:
            self._emitted(described(anchors, stream, values))
            return emit(values, anchors, stream)

        def rec_emit_direct(target: int, values: list[Any], anchors: Any = None, stream: str = "default") -> None:
            self._emitted(described(anchors, stream, values))
            emit_direct(target, values, anchors, stream)

        def faulty_ack(t: Tuple) -> None:
            if self.dropped.pop(id(t), None) is not None:
                return  # the ack is lost on its way: the tree times out
            delay = self.delays.pop(id(t), None)
            if delay is not None:
                self.delayed.append((self.time.now + delay[1], run, t))
                return
            ack(t)

        collector.emit = rec_emit  # type: ignore[method-assign]
        collector.emit_direct = rec_emit_direct  # type: ignore[method-assign,assignment]
        collector.ack = faulty_ack  # type: ignore[method-assign,assignment]

    def _outcome(self, spout: str) -> Any:
        trees = self.result_.trees[spout]

        def on_outcome(task_id: int, msg_id: Any, outcome: str) -> None:
            for mid in members(msg_id):
                trees.setdefault(mid, []).append(outcome)

        return on_outcome

    def _collect(self) -> None:
        """Take new output, dead-letter and error records into the result."""
        errors = errors_topic(self.name)
        for rec in self._new(errors):
            self.result_.reports.append(ErrorReport.decode(rec.value(), topic=errors, partition=rec.partition(), offset=rec.offset()))
        dlq = dead_letter_topic(self.name)
        for rec in self._new(dlq):
            h = read_dead_letter_headers(rec.headers())
            self.result_.dead_letters.append(
                DeadLetter(
                    h.get("component", "?"),
                    h.get("topic", "?"),
                    int(h.get("partition", -1)),
                    int(h.get("offset", -1)),
                    int(h.get("attempts", 0)),
                    h.get("error", ""),
                    rec.value(),
                )
            )
        for cdef in self.topology.components.values():
            sink = cdef.obj.sink_topic(self.name)
            if sink is not None:
                self.result_.sinks.setdefault(sink, []).extend(self._new(sink))
        for out in self.topology.outputs:
            topic = out.topic_for(self.name)
            merged = self.result_.outputs.setdefault(topic, {})
            records = self.result_.output_records.setdefault(topic, [])
            for rec in self._new(topic):
                obj = json.loads(rec.value() or b"{}")
                records.append(obj)
                out.fold(merged, obj)

    def _new(self, topic: str) -> list[Record]:
        records = self.log.records(topic)
        start = self.read_pos.get(topic, 0)
        self.read_pos[topic] = len(records)
        return records[start:]


def members(msg_id: Any) -> list[Any]:
    """The message ids a tree's ``msg_id`` stands for: a pack's members, else itself."""
    of = getattr(msg_id, "members", None)
    return list(of()) if callable(of) else [msg_id]
