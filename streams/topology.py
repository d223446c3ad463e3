"""TopologyBuilder and the validated Topology spec (Storm's TopologyBuilder/StormTopology).

Task ids are global and fixed when the topology is built, as in Storm: spouts first in
declaration order, then bolts. A component's task ``base + i`` is partition ``i`` of its
input topic, so ``__ack_result`` partition ``t`` is spout task ``t``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from streams.batch import BATCH_END_STREAM, COMMIT_STREAM, SYSTEM_STREAMS, BatchBolt, is_committer
from streams.component import DEFAULT_STREAM, BasicBolt, BasicBoltExecutor, Bolt, Component, OutputFieldsDeclarer, Spout, StreamDef
from streams.exceptions import TopologyError
from streams.tuple import SYSTEM_COMPONENT


@dataclass(frozen=True)
class Subscription:
    """A bolt's input: ``(component, stream)`` with a grouping."""

    component: str
    stream: str
    kind: str
    fields: tuple[str, ...] = ()
    custom: Any = None


@dataclass
class ComponentDef:
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
    """A committer's state that ``squall run`` writes to its output file (``{key: value}``):
    ``state`` is the name given to ``context.state``, ``kind`` its semantics."""

    state: str
    kind: str


@dataclass(frozen=True)
class OutputDef:
    """Tuples emitted on ``(component, stream)`` are written to the external ``topic``
    (``{topology}`` in the name is replaced by the topology name)
    as JSON objects ``{field: value}``, keyed by ``key_field``. ``merge`` says how
    ``squall run`` folds them into its output file: ``sum`` or ``last`` per key."""

    topic: str
    component: str
    stream: str
    key_field: str
    value_field: str | tuple[str, ...]
    merge: str = "sum"

    @property
    def value_fields(self) -> tuple[str, ...]:
        return (self.value_field,) if isinstance(self.value_field, str) else tuple(self.value_field)

    def topic_for(self, topology: str) -> str:
        """The topic name with ``{topology}`` replaced (per-run outputs)."""
        return self.topic.replace("{topology}", topology)


class _Declarer:
    def __init__(self, builder: TopologyBuilder, cdef: ComponentDef) -> None:
        self._builder = builder
        self._def = cdef

    def add_configuration(self, key: str, value: Any) -> _Declarer:
        """Component config (highest precedence)."""
        self._def.conf[key] = value
        return self

    def add_configurations(self, conf: dict[str, Any]) -> _Declarer:
        self._def.conf.update(conf)
        return self

    def set_num_tasks(self, n: int) -> _Declarer:
        if n < 1:
            raise TopologyError(f"[{self._def.id}] num_tasks must be >= 1, got {n}")
        self._def.num_tasks = n
        return self


class SpoutDeclarer(_Declarer):
    pass


class BoltDeclarer(_Declarer):
    """Declares a bolt's inputs (Storm's InputDeclarer)."""

    def _add(self, sub: Subscription) -> BoltDeclarer:
        self._def.inputs.append(sub)
        return self

    def shuffle_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        return self._add(Subscription(component, stream, "shuffle"))

    def fields_grouping(self, component: str, fields: Sequence[str], stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        if isinstance(fields, str):
            fields = [fields]
        return self._add(Subscription(component, stream, "fields", tuple(fields)))

    def all_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        return self._add(Subscription(component, stream, "all"))

    def global_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        return self._add(Subscription(component, stream, "global"))

    def none_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        return self._add(Subscription(component, stream, "none"))

    def direct_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        return self._add(Subscription(component, stream, "direct"))

    def local_or_shuffle_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        return self._add(Subscription(component, stream, "local_or_shuffle"))

    def custom_grouping(self, component: str, grouping: Any, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        return self._add(Subscription(component, stream, "custom", custom=grouping))


class TopologyBuilder:
    """Builds a :class:`Topology`. ``create_topology`` validates it; errors name the component."""

    def __init__(self) -> None:
        self._defs: dict[str, ComponentDef] = {}
        self._outputs: list[OutputDef] = []
        self._state_outputs: list[StateOutputDef] = []

    def _add(self, cid: str, obj: Component, parallelism_hint: int, num_tasks: int | None, is_spout: bool) -> ComponentDef:
        if not cid or cid.startswith("__") or "/" in cid or " " in cid:
            raise TopologyError(f"[{cid}] invalid component id (empty, reserved '__' prefix, or has '/' or ' ')")
        if cid in self._defs:
            raise TopologyError(f"[{cid}] duplicate component id")
        if parallelism_hint < 1:
            raise TopologyError(f"[{cid}] parallelism_hint must be >= 1, got {parallelism_hint}")
        obj.validate(cid)
        cdef = ComponentDef(cid, obj, parallelism_hint, num_tasks or parallelism_hint, is_spout)
        self._defs[cid] = cdef
        return cdef

    def set_spout(self, id: str, spout: Spout, parallelism_hint: int = 1, num_tasks: int | None = None) -> SpoutDeclarer:  # noqa: A002
        """Add a spout with ``parallelism_hint`` executors and ``num_tasks`` tasks (default: the hint)."""
        if not isinstance(spout, Spout):
            raise TopologyError(f"[{id}] set_spout needs a Spout, got {type(spout).__name__}")
        return SpoutDeclarer(self, self._add(id, spout, parallelism_hint, num_tasks, True))

    def set_bolt(self, id: str, bolt: Bolt | BasicBolt | BatchBolt, parallelism_hint: int = 1, num_tasks: int | None = None) -> BoltDeclarer:  # noqa: A002
        """Add a bolt (a BasicBolt is wrapped to anchor and ack automatically; a BatchBolt
        belongs in a transactional topology)."""
        wrapped: Component
        if isinstance(bolt, BasicBolt):
            wrapped = BasicBoltExecutor(bolt)
        elif isinstance(bolt, Bolt | BatchBolt):
            wrapped = bolt
        else:
            raise TopologyError(f"[{id}] set_bolt needs a Bolt, BasicBolt or BatchBolt, got {type(bolt).__name__}")
        cdef = self._add(id, wrapped, parallelism_hint, num_tasks, False)
        cdef.committer = is_committer(bolt)
        return BoltDeclarer(self, cdef)

    def set_committer_bolt(self, id: str, bolt: BatchBolt, parallelism_hint: int = 1, num_tasks: int | None = None) -> BoltDeclarer:  # noqa: A002
        """Add a committer bolt (Storm's ``setCommitterBolt``): its ``finish_batch`` runs only
        in the commit phase, in txid order. Raises TopologyError for anything but a BatchBolt."""
        if not isinstance(bolt, BatchBolt):
            raise TopologyError(f"[{id}] a committer bolt must be a BatchBolt, got {type(bolt).__name__}")
        declarer = self.set_bolt(id, bolt, parallelism_hint, num_tasks)
        self._defs[id].committer = True
        return declarer

    def set_state_output(self, state: str, kind: str = "opaque") -> None:
        """``squall run`` writes state ``state`` (of semantics ``kind``) to its output file."""
        self._state_outputs.append(StateOutputDef(state, kind))

    def set_output(
        self, topic: str, component: str, stream: str = DEFAULT_STREAM, *, key_field: str, value_field: str | Sequence[str], merge: str = "sum"
    ) -> None:
        """Write ``(component, stream)`` to the external ``topic`` (a leaf: no tracking).

        ``value_field``: one field, or several (the output file then holds ``{field: value}`` per key)."""
        if merge not in ("sum", "last"):
            raise TopologyError(f"[{component}] output merge must be 'sum' or 'last', got {merge!r}")
        value = value_field if isinstance(value_field, str) else tuple(value_field)
        self._outputs.append(OutputDef(topic, component, stream, key_field, value, merge))

    def create_topology(self, name: str, conf: dict[str, Any] | None = None) -> Topology:
        """Validate and freeze. Raises :class:`TopologyError` naming the component at fault."""
        defs = [copy.copy(d) for d in self._defs.values()]
        for d in defs:
            d.inputs = list(d.inputs)
        if any(is_transactional_spout(d.obj) for d in defs):
            wire_transactional(defs)
        return Topology(name, defs, list(self._outputs), dict(conf or {}), list(self._state_outputs))


def wire_transactional(defs: list[ComponentDef]) -> None:
    """Make a topology transactional (Storm's TransactionalTopologyBuilder): every bolt runs
    in a :class:`~streams.coordinated_bolt.CoordinatedBolt`, listens to its inputs' end
    markers, and committers listen to the spout's commits. Raises TopologyError."""
    from streams.coordinated_bolt import CoordinatedBolt

    spouts = [d for d in defs if d.is_spout]
    if len(spouts) != 1:
        raise TopologyError(f"[{spouts[0].id}] a transactional topology has exactly one spout, got {[d.id for d in spouts]}")
    spout = spouts[0]
    if spout.num_tasks != 1 or spout.parallelism != 1:
        raise TopologyError(f"[{spout.id}] a transactional spout has one task and one executor (it reads every partition), got {spout.num_tasks}")
    for d in defs:
        if d.is_spout:
            continue
        if d.committer and not isinstance(d.obj, BatchBolt):
            raise TopologyError(f"[{d.id}] a committer bolt must be a BatchBolt, got {type(d.obj).__name__}")
        d.obj = CoordinatedBolt(d.obj, d.committer)
        upstream = list(dict.fromkeys(sub.component for sub in d.inputs if sub.stream not in SYSTEM_STREAMS))
        d.inputs += [Subscription(u, BATCH_END_STREAM, "direct") for u in upstream]
        if d.committer:
            d.inputs.append(Subscription(spout.id, COMMIT_STREAM, "all"))


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
                if sub.kind == "fields":
                    missing = [f for f in sub.fields if f not in fields]
                    if missing or not sub.fields:
                        raise TopologyError(f"[{d.id}] fields grouping on {missing or '[]'} but {sub.component}/{sub.stream} declares {list(fields)}")
                if sub.kind == "direct" and not direct:
                    raise TopologyError(f"[{d.id}] direct grouping on {sub.component}/{sub.stream}, which is not declared direct")
                if direct and sub.kind != "direct":
                    raise TopologyError(f"[{d.id}] {sub.kind} grouping on direct stream {sub.component}/{sub.stream}; a direct stream needs direct_grouping")
                if sub.kind == "custom" and not hasattr(sub.custom, "choose_tasks"):
                    raise TopologyError(f"[{d.id}] custom grouping needs a CustomStreamGrouping with choose_tasks")
        for out in self.outputs:
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
        return [d for d in self.components.values() if d.is_spout]

    @property
    def bolts(self) -> list[ComponentDef]:
        return [d for d in self.components.values() if not d.is_spout]

    @property
    def spout_tasks(self) -> int:
        return sum(d.num_tasks for d in self.spouts)

    def fields(self, component: str, stream: str) -> tuple[str, ...]:
        return self.components[component].streams[stream].fields

    def field_index(self, component: str, stream: str) -> dict[str, int]:
        """``field -> position`` of ``(component, stream)`` (empty if unknown, e.g. ticks);
        cached, since every input tuple needs one."""
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
    """True for a transactional or opaque spout (:mod:`streams.transactional_spout`)."""
    return bool(getattr(obj, "transactional", False))
