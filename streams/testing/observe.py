"""How the kit watches a task: :class:`KitHook`, a :class:`streams.TaskHook` as users add their own.

Each task of a :class:`streams.testing.local.LocalTopology` gets one: it records every emit
with its anchors and the message ids of its trees, and holds the acks a fault drops or
delays. Nothing in the runtime is patched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from streams.model.hooks import BoltAckInfo, EmitInfo, TaskHook
from streams.model.tuple import Tuple
from streams.testing.clock import SimulatedTime
from streams.testing.result import Emitted
from streams.testing.tasks import BoltRun, SpoutRun


class Observed(Protocol):
    """What a :class:`KitHook` reads and writes of its local topology (:class:`streams.testing.local.LocalTopology`)."""

    roots: dict[int, Any]
    dropped: dict[int, Tuple]
    delays: dict[int, tuple[Tuple, float]]
    delayed: list[tuple[float, BoltRun, Callable[[], None]]]
    time: SimulatedTime

    def _emitted(self, e: Emitted) -> None: ...


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

    def __init__(self, observer: Observed, run: SpoutRun | BoltRun) -> None:
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
