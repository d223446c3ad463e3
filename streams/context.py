"""TopologyContext: what a task knows about itself and the topology (Storm's TopologyContext)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streams.topology import Topology


class LocalTasks:
    """Which tasks of each component run in this worker process right now.

    Filled by executors as they open their tasks; read by the local-or-shuffle grouping.
    Values are global task ids.
    """

    def __init__(self) -> None:
        self._by_component: dict[str, set[int]] = {}

    def add(self, component: str, tasks: list[int]) -> None:
        self._by_component.setdefault(component, set()).update(tasks)

    def remove(self, component: str, tasks: list[int]) -> None:
        self._by_component.get(component, set()).difference_update(tasks)

    def of(self, component: str) -> set[int]:
        return self._by_component.get(component, set())


class TopologyContext:
    """Per-task view: ``this_task_id`` and the topology's task layout.

    Task ids are global ints (see :mod:`streams.topology`).
    """

    def __init__(self, topology: Topology, component_id: str, task_id: int, worker: str = "", local: LocalTasks | None = None) -> None:
        self.topology = topology
        self.this_component_id = component_id
        self.this_task_id = task_id
        self.worker = worker
        self.local_tasks = local or LocalTasks()
        self.conf: dict[str, Any] = {}

    @property
    def this_task_index(self) -> int:
        """Index of this task within its component (= its input partition)."""
        return self.this_task_id - self.topology.components[self.this_component_id].task_base

    def component_tasks(self, component_id: str) -> list[int]:
        """Global task ids of ``component_id``. Raises KeyError for an unknown component."""
        return list(self.topology.components[component_id].task_ids)

    def component_id(self, task_id: int) -> str:
        """The component that owns ``task_id``."""
        return self.topology.component_of_task(task_id)

    def output_fields(self, stream: str = "default") -> tuple[str, ...]:
        return self.topology.fields(self.this_component_id, stream)
