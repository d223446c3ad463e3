"""TopologyContext: what a task knows about itself and the topology (Storm's TopologyContext)."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import Any

from streams.config import TopologyConfig
from streams.exceptions import StateError, TopologyError
from streams.model.hooks import TaskHook, hook_class
from streams.model.io import ExecutorIO
from streams.model.spec import Topology
from streams.state import State
from streams.state.semantics import STATE_KINDS

METRIC_NAME = re.compile(r"[a-z][a-z0-9_]*")
"""What a registered metric may be called (Prometheus allows more; this keeps ``squall_<name>_total`` plain)."""


class LocalTasks:
    """Which tasks of each component run in this worker process right now.

    Filled by executors as they open their tasks; read by the local-or-shuffle grouping.
    Values are global task ids.
    """

    def __init__(self) -> None:
        self._by_component: dict[str, set[int]] = {}

    def add(self, component: str, tasks: list[int]) -> None:
        """``tasks`` (global ids) of ``component`` run in this worker now."""
        self._by_component.setdefault(component, set()).update(tasks)

    def remove(self, component: str, tasks: list[int]) -> None:
        """``tasks`` of ``component`` stopped running in this worker."""
        self._by_component.get(component, set()).difference_update(tasks)

    def of(self, component: str) -> set[int]:
        """The global task ids of ``component`` running in this worker."""
        return self._by_component.get(component, set())


class TopologyContext:
    """Per-task view: ``this_task_id`` and the topology's task layout.

    Task ids are global ints (see :mod:`streams.model.spec`). ``config`` is the component's
    resolved, typed config (read it, not raw keys: every default lives in
    :class:`~streams.config.TopologyConfig`); ``conf`` is the same as a ``dict`` keyed by
    Storm's names, as ``open``/``prepare`` receive it. ``metrics``: what the task registered
    with :meth:`register_metric` (published with its executor's stats).
    """

    def __init__(
        self,
        topology: Topology,
        component_id: str,
        task_id: int,
        worker: str = "",
        local: LocalTasks | None = None,
        io: ExecutorIO | None = None,
        config: TopologyConfig | None = None,
    ) -> None:
        self.topology = topology
        self.this_component_id = component_id
        self.this_task_id = task_id
        self.worker = worker
        self.local_tasks = local or LocalTasks()
        self.config = config if config is not None else TopologyConfig()
        self.conf: dict[str, Any] = self.config.as_dict()
        self.io = io or ExecutorIO()
        self.metrics: dict[str, Callable[[], float]] = {}
        self.hooks: list[TaskHook] = []
        """The task's hooks (Storm's ``TopologyContext.getHooks``); its collector and executor call them."""

    def add_task_hook(self, hook: TaskHook) -> None:
        """Add ``hook`` to this task (Storm's ``addTaskHook``): ``hook.prepare(conf, context)`` is called, then it sees every emit, ack, fail and execute."""
        hook.prepare(self.conf, self)
        self.hooks.append(hook)

    def add_auto_hooks(self) -> None:
        """Add one new instance of each ``topology.auto.task.hooks`` class (the executor calls it when a task starts). Raises TopologyError for a bad entry."""
        for name in self.config.auto_task_hooks:
            self.add_task_hook(hook_class(name, self.this_component_id)())

    def cleanup_hooks(self) -> None:
        """Call every hook's ``cleanup`` (the task stopped cleanly) and forget them."""
        for hook in self.hooks:
            hook.cleanup()
        self.hooks.clear()

    def register_metric(self, name: str, read: Callable[[], float]) -> None:
        """Publish ``read()`` as counter ``name`` with the executor's stats.

        A total: Prometheus ``squall_<name>_total``, labelled with topology, component, kind and
        worker, summed over the executor's tasks (Storm's ``TopologyContext.registerMetric``).
        Raises TopologyError naming the component for a name that is not ``[a-z][a-z0-9_]*``
        or ends in ``_total``.
        """
        if not METRIC_NAME.fullmatch(name) or name.endswith("_total"):
            raise TopologyError(f"[{self.this_component_id}] metric name {name!r}: use [a-z][a-z0-9_]* without _total (it becomes squall_<name>_total)")
        self.metrics[name] = read

    def register_latency(self, name: str) -> Callable[[float], None]:
        """A recorder of durations (seconds) into histogram ``name`` of the executor's stats.

        Published as Prometheus ``squall_<name>_seconds`` (a histogram labelled with topology,
        component, kind and worker; shared by the executor's tasks), with p50/p99 in ``squall
        status`` and the bench's breakdowns. Where nothing publishes (a bare context), the
        recorder does nothing. Raises TopologyError naming the component for a name that is
        not ``[a-z][a-z0-9_]*``. Storm's ``registerMetric`` with a latency metric. In ``open``
        or ``prepare``::

            self.emit_latency = context.register_latency("batch_emit_latency")
            ...
            self.emit_latency(time.monotonic() - started)
        """
        if not METRIC_NAME.fullmatch(name):
            raise TopologyError(f"[{self.this_component_id}] latency name {name!r}: use [a-z][a-z0-9_]*")
        make = self.io.latency
        if make is None:
            return _ignore
        return make(name)

    def state(self, name: str, kind: str = "opaque", combine: Callable[[Any, Any], Any] | None = None) -> State:
        """The topology's state ``name`` (stored as ``<topology>.<name>``) with Trident's semantics ``kind``.

        ``transactional``, ``opaque`` (default) or ``non-transactional``
        (:mod:`streams.state`), in the store ``squall.state.url`` names. Commits are logged
        under this task. Raises StateError (a bad URL or kind, an unreachable store).
        """
        url = self.config.state_url
        if not url:
            raise StateError(f"[{self.this_component_id}] no state store: set squall.state.url")
        cls = STATE_KINDS.get(kind)
        if cls is None:
            raise StateError(f"[{self.this_component_id}] unknown state kind {kind!r} (kinds: {sorted(STATE_KINDS)})")
        if url.startswith("kafka://"):
            raise StateError(
                f"[{self.this_component_id}] state {name!r}: kafka:// holds only stateful bolts' checkpoints; Trident state needs sqlite:// or postgresql://"
            )
        backend = self.io.state_stores(self.this_component_id).backend(url, self.this_component_id)
        writer = f"{self.this_component_id}:{self.this_task_index}"
        return cls(backend, f"{self.topology.name}.{name}", combine or operator.add, writer=writer, epoch=self.io.epoch)

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
        """The declared fields of this component's ``stream``. Raises KeyError for an undeclared stream."""
        return self.topology.fields(self.this_component_id, stream)


def _ignore(seconds: float) -> None:
    """A latency recorder that records nothing (no executor publishes this context's stats)."""
