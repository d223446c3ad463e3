"""Which tasks each executor runs: Storm's Nimbus assignment, fixed per plan.

An executor owns a fixed, contiguous range of its component's tasks, as in Storm
(``executor -> [start-task, end-task]``). Tasks are the partitions of the component's input
topic, so an executor reads exactly its partitions with ``assign()``, never through a Kafka
group rebalance. What moves tasks is a new plan (``rebalance``) or a restarted worker, and
the control plane makes sure two running executors never claim the same task
(:mod:`service.claims`).

Why not Kafka groups: on the embedded broker a member that leaves while its group is
forming, and is that group's leader, wedges the group for good (its coordinator keeps the
departed leader; every SyncGroup then fails with "rebalance in progress"). A worker restart
makes every executor leave at once, which is exactly that. And a short broker pause
expires sessions, and each rebalance then re-reads everything uncommitted. Fixed
assignments have neither problem, on any Kafka.

>>> executor_tasks(4, 3)
[(0, 1), (2,), (3,)]
>>> executor_tasks(2, 2)
[(0,), (1,)]
>>> a = ExecutorAssignment("count", (0, 1))
>>> ExecutorAssignment.from_json(a.to_json()) == a
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple


class ExecutorAssignment(NamedTuple):
    """One executor of a worker: its component id and the task indexes it owns (each is a
    partition of the component's input topic; for ``__acker``, of ``__acker``)."""

    component: str
    tasks: tuple[int, ...]

    def to_json(self) -> list[Any]:
        """``[component, [task, ...]]`` (the worker plan's form)."""
        return [self.component, list(self.tasks)]

    @staticmethod
    def from_json(raw: Sequence[Any]) -> ExecutorAssignment:
        """Parse ``[component, [task, ...]]``. Raises ValueError on another shape."""
        if len(raw) != 2 or not isinstance(raw[0], str) or not isinstance(raw[1], list):
            raise ValueError(f"executor assignment must be [component, [tasks]], got {raw!r}")
        return ExecutorAssignment(raw[0], tuple(int(t) for t in raw[1]))


def executor_tasks(num_tasks: int, executors: int) -> list[tuple[int, ...]]:
    """Split tasks ``0 .. num_tasks-1`` into ``executors`` contiguous ranges; the first
    ``num_tasks % executors`` ranges get one task more (Storm's even split). Raises
    ValueError unless ``1 <= executors <= num_tasks``."""
    if not 1 <= executors <= num_tasks:
        raise ValueError(f"executors must be 1..{num_tasks} (the task count), got {executors}")
    base, extra = divmod(num_tasks, executors)
    out: list[tuple[int, ...]] = []
    start = 0
    for k in range(executors):
        size = base + (1 if k < extra else 0)
        out.append(tuple(range(start, start + size)))
        start += size
    return out


def worker_components(worker: Sequence[ExecutorAssignment]) -> list[str]:
    """The component ids of a worker's executors, one per executor, in plan order."""
    return [e.component for e in worker]
