"""The validated topology spec (Storm's ``StormTopology``).

Components with global task ids, their streams and subscriptions, and the outputs ``squall
run`` writes.

Task ids are global and fixed when the topology is built, as in Storm: spouts first in
declaration order, then bolts. A component's task ``base + i`` is partition ``i`` of its
input topic, so ``__ack_result`` partition ``t`` is spout task ``t``. Built by
:class:`streams.model.topology.TopologyBuilder`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from streams.exceptions import TopologyError
from streams.model.component import Component, Hold, OutputFieldsDeclarer, StreamDef
from streams.model.tuple import SYSTEM_COMPONENT
from streams.wire.naming import component_topic


class GroupingKind(StrEnum):
    """Storm's seven stream groupings plus custom (``daemon/GrouperFactory.java``)."""

    SHUFFLE = "shuffle"
    FIELDS = "fields"
    ALL = "all"
    GLOBAL = "global"
    NONE = "none"
    DIRECT = "direct"
    LOCAL_OR_SHUFFLE = "local_or_shuffle"
    CUSTOM = "custom"


@dataclass(frozen=True)
class Subscription:
    """A bolt's input: ``(component, stream)`` with a grouping."""

    component: str
    stream: str
    kind: GroupingKind
    fields: tuple[str, ...] = ()
    custom: Any = None


@dataclass
class ComponentDef:
    """One component of a topology: the user's object, its parallelism, tasks, inputs, config and declared streams."""

    id: str
    obj: Component
    parallelism: int
    num_tasks: int
    is_spout: bool
    inputs: list[Subscription] = field(default_factory=list)
    conf: dict[str, Any] = field(default_factory=dict)
    streams: dict[str, StreamDef] = field(default_factory=dict)
    task_base: int = 0
    committer: bool = False

    @property
    def task_ids(self) -> range:
        """Its global task ids (``task_base .. task_base + num_tasks - 1``)."""
        return range(self.task_base, self.task_base + self.num_tasks)

    @property
    def input_partitions(self) -> int:
        """Partitions of its own topic (one per task, except a transactional spout's)."""
        return self.obj.input_partitions(self.num_tasks)

    def new_instance(self) -> Component:
        """A fresh copy of the user's component for one task (Storm deserialises one per task)."""
        return copy.deepcopy(self.obj)


@dataclass(frozen=True)
class StateOutputDef:
    """A committer's state that ``squall run`` writes to its output file (``{key: value}``).

    ``state`` is the name given to ``context.state``, ``kind`` its semantics; for
    ``kind="keyvalue"``, ``state`` is a stateful bolt's component id (its tasks' states, merged).
    """

    state: str
    kind: str


@dataclass(frozen=True)
class OutputDef:
    """Tuples emitted on ``(component, stream)`` go to the external ``topic``.

    ``{topology}`` in the name is replaced by the topology name. Each tuple is written as a
    JSON object ``{field: value}``, keyed by ``key_field``. ``merge`` says how
    ``squall run`` folds them into its output file: ``sum`` or ``last`` per key.
    """

    topic: str
    component: str
    stream: str
    key_field: str
    value_field: str | tuple[str, ...]
    merge: str = "sum"

    @property
    def value_fields(self) -> tuple[str, ...]:
        """The value fields, as a tuple (one or several)."""
        return (self.value_field,) if isinstance(self.value_field, str) else tuple(self.value_field)

    def topic_for(self, topology: str) -> str:
        """The topic name with ``{topology}`` replaced (per-run outputs)."""
        return self.topic.replace("{topology}", topology)

    def fold(self, merged: dict[str, Any], obj: dict[str, Any]) -> None:
        """Fold one output record ``obj`` into ``merged``, as ``squall run`` writes its output file.

        ``{key: value}`` for one value field, ``{key: {field: value}}`` for several; ``sum``
        adds, ``last`` replaces.

        >>> out, merged = OutputDef("t", "count", "counts", "word", "count"), {}
        >>> for obj in ({"word": "a", "count": 2}, {"word": "a", "count": 3}): out.fold(merged, obj)
        >>> merged
        {'a': 5}
        """
        key = str(obj[self.key_field])
        if isinstance(self.value_field, str):
            merged[key] = merged.get(key, 0) + obj[self.value_field] if self.merge == "sum" else obj[self.value_field]
            return
        slot = merged.setdefault(key, {})
        for f in self.value_fields:
            slot[f] = slot.get(f, 0) + obj[f] if self.merge == "sum" else obj[f]


class Topology:
    """A validated topology: components with global task ids, streams and subscriptions."""

    def __init__(
        self, name: str, defs: list[ComponentDef], outputs: list[OutputDef], conf: dict[str, Any], state_outputs: list[StateOutputDef] | None = None
    ) -> None:
        if not name or "/" in name or " " in name:
            raise TopologyError(f"invalid topology name {name!r}")
        self.name = name
        self.conf = conf
        self.outputs = outputs
        self.state_outputs = state_outputs or []
        self.transactional = any(is_transactional_spout(d.obj) for d in defs)
        self.tuple_ids = any(d.obj.needs_tuple_ids for d in defs)
        """Tuples carry ids that survive replays: a stateful bolt deduplicates by them (:mod:`streams.state.keyvalue`)."""
        self._field_index: dict[tuple[str, str], dict[str, int]] = {}
        ordered = [d for d in defs if d.is_spout] + [d for d in defs if not d.is_spout]
        self.components: dict[str, ComponentDef] = {d.id: d for d in ordered}
        base = 0
        for d in ordered:
            d.task_base = base
            base += d.num_tasks
            decl = OutputFieldsDeclarer(d.id)
            d.obj.declare_output_fields(decl)
            d.streams = decl.streams
            d.conf = {**(d.obj.get_component_configuration() or {}), **d.conf}
        self.total_tasks = base
        self._validate()
        self._subscribers: dict[tuple[str, str], list[tuple[ComponentDef, Subscription]]] = {}
        for d in ordered:
            for sub in d.inputs:
                self._subscribers.setdefault((sub.component, sub.stream), []).append((d, sub))
        self.tid_components = self._tid_components()
        """Components whose emits carry tuple ids: those a stateful bolt is downstream of (its dedupe needs them)."""

    def _tid_components(self) -> frozenset[str]:
        """Every component from which a bolt that needs tuple ids can be reached (the ids are derived hop by hop from the spout's)."""
        if not self.tuple_ids:
            return frozenset()
        downstream: dict[str, set[str]] = {}
        for d in self.components.values():
            for sub in d.inputs:
                downstream.setdefault(sub.component, set()).add(d.id)
        needing = {cid for cid, d in self.components.items() if d.obj.needs_tuple_ids}
        out: set[str] = set()
        for cid in self.components:
            seen, todo = set(), list(downstream.get(cid, ()))
            while todo:
                nxt = todo.pop()
                if nxt in needing:
                    out.add(cid)
                    break
                if nxt not in seen:
                    seen.add(nxt)
                    todo.extend(downstream.get(nxt, ()))
        return frozenset(out)

    def _validate(self) -> None:
        if not any(d.is_spout for d in self.components.values()):
            raise TopologyError(f"[{self.name}] a topology needs at least one spout")
        for d in self.components.values():
            if d.parallelism > d.num_tasks:
                raise TopologyError(f"[{d.id}] parallelism {d.parallelism} is above its task count {d.num_tasks}")
            seen: set[tuple[str, str]] = set()
            for sub in d.inputs:
                sdef = self._stream_of(d.id, "subscribes to", sub.component, sub.stream)
                if (sub.component, sub.stream) in seen:
                    raise TopologyError(f"[{d.id}] subscribes twice to {sub.component}/{sub.stream}")
                seen.add((sub.component, sub.stream))
                fields, direct = sdef.fields, sdef.direct
                if sub.kind == GroupingKind.FIELDS:
                    missing = [f for f in sub.fields if f not in fields]
                    if missing or not sub.fields:
                        raise TopologyError(f"[{d.id}] fields grouping on {missing or '[]'} but {sub.component}/{sub.stream} declares {list(fields)}")
                if sub.kind == GroupingKind.DIRECT and not direct:
                    raise TopologyError(f"[{d.id}] direct grouping on {sub.component}/{sub.stream}, which is not declared direct")
                if direct and sub.kind != GroupingKind.DIRECT:
                    raise TopologyError(f"[{d.id}] {sub.kind} grouping on direct stream {sub.component}/{sub.stream}; a direct stream needs direct_grouping")
                if d.obj.needs_same_task_replays and sub.kind in (GroupingKind.SHUFFLE, GroupingKind.NONE, GroupingKind.LOCAL_OR_SHUFFLE):
                    raise TopologyError(
                        f"[{d.id}] a stateful bolt cannot take {sub.component}/{sub.stream} by {sub.kind} grouping: a replayed tuple could reach "
                        "another task and count twice; use fields, global, all, direct or a custom grouping"
                    )
                if sub.kind == GroupingKind.CUSTOM and not hasattr(sub.custom, "choose_tasks"):
                    raise TopologyError(f"[{d.id}] custom grouping needs a CustomStreamGrouping with choose_tasks")
            d.obj.validate_inputs(d.id, {(s.component, s.stream): self.fields(s.component, s.stream) for s in d.inputs})
        for out in self.outputs:
            clash = [cid for cid in self.components if component_topic("{topology}", cid) == out.topic]
            if clash:
                raise TopologyError(f"[{out.component}] output topic {out.topic!r} is the input topic of component {clash[0]!r}: name it otherwise")
            fields = self._stream_of(out.component, f"output to {out.topic!r} from", out.component, out.stream).fields
            for f in (out.key_field, *out.value_fields):
                if f not in fields:
                    raise TopologyError(f"[{out.component}] output field {f!r} not in {list(fields)}")

    def _stream_of(self, who: str, what: str, component: str, stream: str) -> StreamDef:
        """The declared ``component``/``stream``; raises TopologyError naming ``who``."""
        src = self.components.get(component)
        if src is None:
            raise TopologyError(f"[{who}] {what} unknown component {component!r}")
        sdef = src.streams.get(stream)
        if sdef is None:
            raise TopologyError(f"[{who}] {what} unknown stream {stream!r} of {component!r} (declared: {sorted(src.streams)})")
        return sdef

    # -- queries ---------------------------------------------------------------------
    def subscribers(self, component: str, stream: str) -> list[tuple[ComponentDef, Subscription]]:
        """Bolts subscribed to ``(component, stream)`` with their subscription."""
        return self._subscribers.get((component, stream), [])

    def component_of_task(self, task: int) -> str:
        """The component id that owns global ``task``. Raises KeyError for an unknown task."""
        if task < 0:
            return SYSTEM_COMPONENT
        for d in self.components.values():
            if d.task_base <= task < d.task_base + d.num_tasks:
                return d.id
        raise KeyError(f"[{self.name}] no component owns task {task}")

    @property
    def spouts(self) -> list[ComponentDef]:
        """The spouts, in task order."""
        return [d for d in self.components.values() if d.is_spout]

    @property
    def bolts(self) -> list[ComponentDef]:
        """The bolts, in task order."""
        return [d for d in self.components.values() if not d.is_spout]

    @property
    def bolt_topics(self) -> frozenset[str]:
        """The bolts' input topics, ``squall.T.<bolt>`` (where tuples travel, one or a pack a record)."""
        return frozenset(component_topic(self.name, d.id) for d in self.bolts)

    @property
    def spout_tasks(self) -> int:
        """How many spout tasks there are (partitions of ``__ack_result``)."""
        return sum(d.num_tasks for d in self.spouts)

    def hold(self) -> Hold:
        """What the bolts hold before acking, at most: tuples over all of a bolt's tasks, seconds, and whether any holds by event time.

        Windows hold tuples until they expire (:meth:`Component.hold`); a spout's bound on trees
        in flight must leave room for them, or count windows never fill and event-time windows
        never see the newer timestamps that close them.
        """
        tuples, seconds, event_time, checkpointed = 0, 0.0, False, False
        for d in self.bolts:
            h = d.obj.hold()
            tuples = max(tuples, h.tuples * d.num_tasks)
            seconds = max(seconds, h.seconds)
            event_time = event_time or h.event_time
            checkpointed = checkpointed or h.checkpointed
        return Hold(tuples, seconds, event_time, checkpointed)

    def fields(self, component: str, stream: str) -> tuple[str, ...]:
        """The declared fields of ``(component, stream)``. Raises KeyError for an unknown one."""
        return self.components[component].streams[stream].fields

    def field_index(self, component: str, stream: str) -> dict[str, int]:
        """``field -> position`` of ``(component, stream)`` (empty if unknown, e.g. ticks); cached, since every input tuple needs one."""
        key = (component, stream)
        idx = self._field_index.get(key)
        if idx is None:
            try:
                fields = self.fields(component, stream)
            except KeyError:
                fields = ()
            idx = self._field_index[key] = {f: i for i, f in enumerate(fields)}
        return idx


def is_transactional_spout(obj: Any) -> bool:
    """True for a transactional or opaque spout (:mod:`streams.transactional.spout`)."""
    return bool(getattr(obj, "transactional", False))
