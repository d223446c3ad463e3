"""TopologyContext: what a task knows about itself and the topology (Storm's TopologyContext)."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streams.config import TopologyConfig
from streams.exceptions import StateError, TopologyError
from streams.model.hooks import TaskHook, hook_class
from streams.model.spec import Topology
from streams.state import State, StateBackend, open_backend
from streams.state.backend import KvStore
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


@dataclass
class ExecutorIO:
    """What a task may use of its executor.

    The Kafka it runs on (``bootstrap`` and client overrides ``kafka = {"consumer": {...},
    "producer": {...}}``), the dead-letter topic (``dead_letter(message, reason,
    attempts)``), and the state stores it opened (one backend per URL, shared by the
    executor's tasks).
    """

    bootstrap: str = ""
    kafka: dict[str, Any] = field(default_factory=dict)
    dead_letter: Callable[..., None] | None = None
    """``dead_letter(message, reason, attempts, details=None)`` (:meth:`streams.runtime.executor.Executor.dead_letter`)."""
    dead_letter_raw: Callable[..., None] | None = None
    """``dead_letter_raw(value, key, reason, *, topic, partition, offset, attempts)``: a record given by its parts (a tuple a sink cannot write)."""
    stores: dict[str, StateBackend] = field(default_factory=dict)
    source_positions: Callable[[], dict[int, int]] | None = None
    """The KafkaSpouts' committed offsets by source key (:mod:`streams.kafka.positions`): what a stateful bolt may forget."""
    open_changelog: Callable[[], KvStore] | None = None
    """Opens the compacted-changelog store of ``kafka://`` state on this executor's Kafka (:mod:`streams.kafka.changelog_store`)."""
    kv_stores: dict[str, KvStore] = field(default_factory=dict)
    batch_source: Callable[[str, list[str]], Any] | None = None
    """``batch_source(component, topics)``: a transactional spout's coordinator state and source records
    (:class:`streams.transactional.batch_source.BatchSource`); None: Kafka's. The test kit gives an in-memory one."""
    new_producer: Callable[[dict[str, Any]], Any] | None = None
    """Makes the producers components open themselves (a KafkaBolt's), from librdkafka settings;
    None: a real Kafka producer. The test kit gives an in-memory one (:mod:`streams.testing.memlog`)."""
    epoch: int = 0
    """The worker's claim epoch (:mod:`streams.runtime.fencing`): a Trident state refuses a commit from an older one than its writer's last (0: not checked)."""
    latency: Callable[[str], Callable[[float], None]] | None = None
    """``latency(name)``: a recorder of seconds into the executor's histogram ``name``
    (published with its stats, :meth:`TopologyContext.register_latency`); None: not recorded."""
    shared: dict[str, Any] = field(default_factory=dict)
    """Handles a task's copies share (a BatchBolt gets a fresh copy per batch), by a key the component picks.

    Closed with the stores, if they have ``close()``."""

    def kv_store(self, url: str, component: str) -> KvStore:
        """The store of stateful bolt checkpoints at ``url`` (one per URL, shared by the executor's tasks).

        ``kafka://``: compacted changelog topics on the topology's Kafka; else a database
        (:func:`streams.state.stores.open_backend`). Raises StateError naming ``component``.
        """
        store = self.kv_stores.get(url)
        if store is None:
            if url.startswith("kafka://"):
                if self.open_changelog is None:
                    raise StateError(f"[{component}] kafka:// state needs a Kafka executor (not available here)")
                store = self.open_changelog()
            else:
                store = self.stores.get(url)
                if store is None:
                    store = self.stores[url] = open_backend(url)
            self.kv_stores[url] = store
        return store

    def close_stores(self) -> None:
        """Close the stores opened here (a changelog store flushes its producers)."""
        for store in {id(s): s for s in [*self.stores.values(), *self.kv_stores.values()]}.values():
            store.close()
        for handle in self.shared.values():
            close = getattr(handle, "close", None)
            if callable(close):
                close()
        self.stores.clear()
        self.kv_stores.clear()
        self.shared.clear()


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
        backend = self.io.stores.get(url)
        if backend is None:
            backend = self.io.stores[url] = open_backend(url)
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
