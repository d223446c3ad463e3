"""What a kit run observes: every emit with its anchors, each tree's outcomes, dead letters, outputs and sinks.

A mixin of :class:`streams.testing.local.LocalTopology`. Each task gets a :class:`KitHook`
(a :class:`streams.TaskHook`, as users add their own): it records every emit and holds the
acks a fault drops or delays; nothing in the runtime is patched. The mixin also reads the
in-memory log's external topics.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from streams.model.hooks import BoltAckInfo, EmitInfo, TaskHook
from streams.model.spec import Topology
from streams.model.tuple import Tuple
from streams.monitoring.errors import ErrorReport
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
    delayed: list[tuple[float, BoltRun, Callable[[], None]]]
    read_pos: dict[str, int]

    def _emitted(self, e: Emitted) -> None:
        self.result_.emitted.setdefault((e.component, e.stream), []).append(e)

    def _observer(self, run: SpoutRun | BoltRun) -> KitHook:
        """The task hook through which the kit watches ``run``'s task: its emits, and its acks to drop or delay."""
        return KitHook(self, run)

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


class KitHook(TaskHook):
    """The kit's hook on one task (Storm's ``ITaskHook``): records emits into the run's result, and injects the ack faults.

    ``drop_ack``: the ack is held and never sent (the tree times out). ``delay_ack``: it is
    held and sent ``seconds`` (simulated) later, by :meth:`streams.testing.local.LocalTopology.advance`.

    Args:
      observer: the local topology.
      run: the task it watches.
    """

    def __init__(self, observer: Observer, run: SpoutRun | BoltRun) -> None:
        self.observer = observer
        self.run = run
        self.last: tuple[tuple[Tuple, ...], tuple[tuple[Any, ...], ...], tuple[Any, ...]] = ((), (), ())
        """The last large anchor list, its anchors' values and their message ids (a window's emits share them)."""

    def emit(self, info: EmitInfo) -> None:
        """Record the emit with the values of its anchors and the message ids of its trees."""
        comp, task = self.run.component, self.run.task_id
        if isinstance(self.run, SpoutRun):
            ids = () if info.message_id is None else (info.message_id,)
            self.observer._emitted(Emitted(comp, task, info.stream, tuple(info.values), (), ids))
            return
        anchors = info.anchors
        if len(anchors) > 8 and anchors == self.last[0]:  # described once, not per emit
            self.observer._emitted(Emitted(comp, task, info.stream, tuple(info.values), self.last[1], self.last[2]))
            return
        roots = self.observer.roots
        mids = tuple(dict.fromkeys(roots[r] for a in anchors for r in a.anchors if r in roots))
        anchor_values = tuple(tuple(a.values) for a in anchors)
        if len(anchors) > 8:
            self.last = (anchors, anchor_values, mids)
        self.observer._emitted(Emitted(comp, task, info.stream, tuple(info.values), anchor_values, mids))

    def bolt_ack(self, info: BoltAckInfo) -> None:
        """Hold an ack a fault drops (forever) or delays (until its time comes)."""
        obs, t = self.observer, info.tuple
        if obs.dropped.pop(id(t), None) is not None:
            info.hold()  # the ack is lost on its way: the tree times out
            return
        delay = obs.delays.pop(id(t), None)
        if delay is not None and isinstance(self.run, BoltRun):
            obs.delayed.append((obs.time.now + delay[1], self.run, info.hold()))
