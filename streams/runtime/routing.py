"""Routing (Storm's ``executor/`` grouper wiring).

For each stream a task emits on, the subscribers' topics with the grouping that picks their
partitions (tasks), and the external outputs (``set_output``).

One :class:`Router` per emitting task; one grouping object per subscription
(:func:`make_grouping`), since shuffle and custom groupings keep per-task state.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streams.exceptions import FatalError, TopologyError
from streams.model.context import TopologyContext
from streams.model.grouping import (
    AllGrouping,
    CustomGrouping,
    DirectGrouping,
    FieldsGrouping,
    GlobalGrouping,
    Grouping,
    LocalOrShuffleGrouping,
    ShuffleGrouping,
)
from streams.model.spec import GroupingKind, Topology
from streams.wire.naming import component_topic, show_topic


@dataclass
class Route:
    """One subscriber of a stream: where and how to send."""

    target: str
    topic: str
    n: int
    base: int
    grouping: Grouping
    direct: bool


@dataclass
class Output:
    """An external output of a stream (``set_output``): its topic, key field position and fields."""

    topic: str
    key_index: int
    fields: tuple[str, ...]


class Router:
    """Per-task routing table: ``stream -> [Route]`` and ``stream -> [Output]``."""

    def __init__(self, topology: Topology, component: str, context: TopologyContext) -> None:
        cdef = topology.components[component]
        self.component = component
        self.tuple_ids = component in topology.tid_components
        """Its emits carry ids across replays: a stateful bolt is downstream (:mod:`streams.state.keyvalue`); past the last one, nothing needs them."""
        self.routes: dict[str, list[Route]] = {}
        self.outputs: dict[str, list[Output]] = {}
        self.direct: dict[str, bool] = {}
        for stream, sdef in cdef.streams.items():
            fields, direct = sdef.fields, sdef.direct
            routes = []
            for target, sub in topology.subscribers(component, stream):
                grouping = make_grouping(
                    sub.kind,
                    n=target.num_tasks,
                    source_fields=fields,
                    fields=sub.fields,
                    target=target.id,
                    base=target.task_base,
                    context=context,
                    source=(component, stream),
                    custom=copy.deepcopy(sub.custom) if sub.custom is not None else None,
                )
                routes.append(Route(target.id, component_topic(topology.name, target.id), target.num_tasks, target.task_base, grouping, direct))
            self.routes[stream] = routes
            self.direct[stream] = direct
            self.outputs[stream] = [
                Output(o.topic_for(topology.name), fields.index(o.key_field), fields)
                for o in topology.outputs
                if o.component == component and o.stream == stream
            ]
            if f"{component}:{stream}" in context.config.show_streams and fields:  # squall run --show
                self.outputs[stream].append(Output(show_topic(topology.name, component, stream), 0, fields))

    def stream(self, stream: str) -> list[Route]:
        """The routes of ``stream``. Raises FatalError naming the component for an undeclared stream."""
        try:
            return self.routes[stream]
        except KeyError:
            raise FatalError(f"[{self.component}] emit on undeclared stream {stream!r} (declared: {sorted(self.routes)})") from None


def make_grouping(
    kind: GroupingKind,
    *,
    n: int,
    source_fields: Sequence[str],
    fields: Sequence[str],
    target: str,
    base: int,
    context: TopologyContext,
    source: tuple[str, str],
    custom: Any = None,
) -> Grouping:
    """Instantiate the runtime grouping for one subscription (one per emitting task)."""
    if kind in (GroupingKind.SHUFFLE, GroupingKind.NONE):
        return ShuffleGrouping(n)
    if kind == GroupingKind.FIELDS:
        return FieldsGrouping(n, [list(source_fields).index(f) for f in fields])
    if kind == GroupingKind.ALL:
        return AllGrouping(n)
    if kind == GroupingKind.GLOBAL:
        return GlobalGrouping()
    if kind == GroupingKind.DIRECT:
        return DirectGrouping()
    if kind == GroupingKind.LOCAL_OR_SHUFFLE:
        return LocalOrShuffleGrouping(n, target, base, context.local_tasks)
    if kind == GroupingKind.CUSTOM:
        custom.prepare(context, source, list(range(base, base + n)))
        return CustomGrouping(custom, context.this_task_id, base, n, target)
    raise TopologyError(f"[{target}] unknown grouping {kind!r}")
