"""TopologyBuilder (Storm's ``TopologyBuilder``).

Declare spouts, bolts and their groupings, then :meth:`TopologyBuilder.create_topology`
validates and freezes a :class:`~streams.model.spec.Topology`.

The builder knows no runtime and no transactional machinery: each spout may extend the
topology before it is frozen (:meth:`streams.model.spout.Spout.extend_topology`, after
Storm's ``BatchSubtopologyBuilder.extendTopology``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from streams.exceptions import TopologyError
from streams.model.batch import BatchBolt, is_committer
from streams.model.bolt import BasicBolt, BasicBoltExecutor, Bolt
from streams.model.component import Component
from streams.model.spec import ComponentDef, GroupingKind, OutputDef, StateOutputDef, Subscription, Topology
from streams.model.spout import Spout
from streams.model.stateful import StatefulBolt, StatefulBoltExecutor
from streams.model.stateful_windowed import StatefulWindowedBolt, persistent_windows
from streams.model.tuple import DEFAULT_STREAM
from streams.model.windowed import WindowedBolt, WindowedBoltExecutor


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
    """Declares a spout's component config and task count (Storm's ``SpoutDeclarer``)."""

    pass


class BoltDeclarer(_Declarer):
    """Declares a bolt's inputs (Storm's InputDeclarer)."""

    def _add(self, sub: Subscription) -> BoltDeclarer:
        self._def.inputs.append(sub)
        return self

    def shuffle_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Subscribe to ``component``'s ``stream``, spread evenly over this bolt's tasks (Storm's shuffle grouping)."""
        return self._add(Subscription(component, stream, GroupingKind.SHUFFLE))

    def fields_grouping(self, component: str, fields: Sequence[str], stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Subscribe so that equal values of ``fields`` always reach the same task (Storm's fields grouping)."""
        if isinstance(fields, str):
            fields = [fields]
        return self._add(Subscription(component, stream, GroupingKind.FIELDS, tuple(fields)))

    def all_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Subscribe so that every task gets every tuple (Storm's all grouping)."""
        return self._add(Subscription(component, stream, GroupingKind.ALL))

    def global_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Subscribe so that the lowest task gets every tuple (Storm's global grouping)."""
        return self._add(Subscription(component, stream, GroupingKind.GLOBAL))

    def none_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Subscribe without caring which task gets a tuple (Storm's none grouping; a shuffle here)."""
        return self._add(Subscription(component, stream, GroupingKind.NONE))

    def direct_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Subscribe to a direct stream: the emitter names the task (``emit_direct``)."""
        return self._add(Subscription(component, stream, GroupingKind.DIRECT))

    def local_or_shuffle_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Subscribe preferring this bolt's tasks in the emitting worker, else a shuffle (Storm's local-or-shuffle)."""
        return self._add(Subscription(component, stream, GroupingKind.LOCAL_OR_SHUFFLE))

    def custom_grouping(self, component: str, grouping: Any, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Subscribe through a :class:`~streams.model.grouping.CustomStreamGrouping` (``choose_tasks``)."""
        return self._add(Subscription(component, stream, GroupingKind.CUSTOM, custom=grouping))


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

    def set_bolt(
        self,
        id: str,  # noqa: A002
        bolt: Bolt | BasicBolt | BatchBolt | WindowedBolt | StatefulBolt | StatefulWindowedBolt,
        parallelism_hint: int = 1,
        num_tasks: int | None = None,
    ) -> BoltDeclarer:
        """Add a bolt (a BasicBolt is wrapped to anchor and ack automatically, a WindowedBolt to get windows; a BatchBolt is transactional)."""
        wrapped: Component
        if isinstance(bolt, BasicBolt):
            wrapped = BasicBoltExecutor(bolt)
        elif isinstance(bolt, StatefulWindowedBolt):
            wrapped = persistent_windows(bolt)
        elif isinstance(bolt, WindowedBolt):
            wrapped = WindowedBoltExecutor(bolt)
        elif isinstance(bolt, StatefulBolt):
            wrapped = StatefulBoltExecutor(bolt)
        elif isinstance(bolt, Bolt | BatchBolt):
            wrapped = bolt
        else:
            raise TopologyError(f"[{id}] set_bolt needs a Bolt, BasicBolt, WindowedBolt, StatefulBolt or BatchBolt, got {type(bolt).__name__}")
        cdef = self._add(id, wrapped, parallelism_hint, num_tasks, False)
        cdef.committer = is_committer(bolt)
        return BoltDeclarer(self, cdef)

    def set_committer_bolt(self, id: str, bolt: BatchBolt, parallelism_hint: int = 1, num_tasks: int | None = None) -> BoltDeclarer:  # noqa: A002
        """Add a committer bolt (Storm's ``setCommitterBolt``): its ``finish_batch`` runs only in the commit phase, in txid order.

        Raises TopologyError for anything but a BatchBolt.
        """
        if not isinstance(bolt, BatchBolt):
            raise TopologyError(f"[{id}] a committer bolt must be a BatchBolt, got {type(bolt).__name__}")
        declarer = self.set_bolt(id, bolt, parallelism_hint, num_tasks)
        self._defs[id].committer = True
        return declarer

    def set_state_output(self, state: str, kind: str = "opaque") -> None:
        """``squall run`` writes state ``state`` (of semantics ``kind``) to its output file.

        ``kind="keyvalue"``: ``state`` is a StatefulBolt's component id; its tasks' key-value states are merged.
        """
        self._state_outputs.append(StateOutputDef(state, kind))

    def set_output(
        self, topic: str, component: str, stream: str = DEFAULT_STREAM, *, key_field: str, value_field: str | Sequence[str], merge: str = "sum"
    ) -> None:
        """Write ``(component, stream)`` to the external ``topic`` (a leaf: no tracking).

        ``value_field``: one field, or several (the output file then holds ``{field: value}`` per key).
        """
        if merge not in ("sum", "last"):
            raise TopologyError(f"[{component}] output merge must be 'sum' or 'last', got {merge!r}")
        value = value_field if isinstance(value_field, str) else tuple(value_field)
        self._outputs.append(OutputDef(topic, component, stream, key_field, value, merge))

    def create_topology(self, name: str, conf: dict[str, Any] | None = None) -> Topology:
        """Validate and freeze. Raises :class:`TopologyError` naming the component at fault."""
        defs = [copy.copy(d) for d in self._defs.values()]
        for d in defs:
            d.inputs = list(d.inputs)
        for d in list(defs):
            if d.is_spout:
                spout = d.obj
                assert isinstance(spout, Spout)
                spout.extend_topology(d.id, defs)  # e.g. a transactional spout wraps every bolt
        return Topology(name, defs, list(self._outputs), dict(conf or {}), list(self._state_outputs))
