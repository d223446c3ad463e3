"""Compiles a stream graph into spouts and bolts (Storm's ``StreamBuilder.build``: processor nodes grouped into bolts at repartition points).

The rules, in Storm's words:

1. **Fusion.** Consecutive stateless operations run in one bolt, as a
   :class:`~streams.api.chain.Chain`: a value goes from one to the next by a Python call.
   The operations after a spout start a :class:`~streams.api.bolts.ProcessorBolt` (shuffle
   grouping); those after an aggregation, a join or a state run in that bolt, after it.
2. **Grouping placement.** An operation that needs the values of one key together starts a
   new bolt subscribed with a fields grouping on ``key``: ``*_by_key``, joins, cogroups,
   ``update_state_by_key``, and ``state_query`` (on the queried value, so a query reaches the
   task that holds its key). A global ``aggregate``/``reduce`` takes a global grouping (one
   task); ``repartition(n)`` a shuffle to ``n`` executors; ``to(bolt)`` a shuffle to the user's bolt.
3. **Anchoring.** Every emit a bolt reads is anchored: a processor bolt is a BasicBolt
   (anchored to its input, acked after), an aggregation anchors to the tuples it aggregated
   (a running aggregate that only feeds outputs writes them first, then acks:
   :class:`~streams.api.bolts.AggregateBolt`), a window to its tuples, a state update to its input.
4. **Combining.** A processor bolt that feeds a running aggregate (``aggregate``,
   ``*_by_key`` without a window) combines its values per key and tick first, and sends
   partials anchored to the tuples they fold (:class:`~streams.api.bolts.CombiningBolt`); a
   window bolt (a windowed aggregate, join or cogroup) does so per window. The aggregate
   merges them (Storm combines before ``partitionBy(KEY)`` for windowed streams).
   ``StreamBuilder(combine=False)`` turns it off.

The parallelism of a bolt is that of the stream it starts from (a spout's, or
``repartition``'s); a global aggregate runs on one task. A ``repartition`` after a bolt
whose every consumer regroups anyway (an aggregation, a window, a join, a cogroup, a state,
``to``) would be a bolt that runs nothing, one Kafka hop more: it sets the parallelism of
what follows and starts no bolt (``s.repartition(4).count_by_key()`` is one bolt of 4
executors). A bolt that a ``repartition`` starts is named after the one operation fused
first into it, if it has one (``lines.repartition(1).flat_map(f)`` is ``flat_map1``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from streams.api.bolts import PAIR_QUERY, QUERY, UPDATE, AggregateBolt, CombiningBolt, ProcessorBolt, Reader, StateBolt, WindowBolt
from streams.api.chain import STATELESS, Chain, Port, Step
from streams.api.graph import Node
from streams.exceptions import TopologyError
from streams.model.component import OutputFieldsDeclarer
from streams.model.spec import GroupingKind, Topology
from streams.model.topology import TopologyBuilder
from streams.model.tuple import DEFAULT_STREAM

if TYPE_CHECKING:
    from streams.api.stream import StreamBuilder


REGROUPING = ("aggregate", "window", "join", "cogroup", "state", "state_query", "to")
"""Operations that start a bolt of their own, reading their input through a grouping (module docstring, rule 2)."""


@dataclass(eq=False)
class Group:
    """One component being compiled: a spout, a bolt (its head and its chain), or the user's bolt of ``to``."""

    id: str
    kind: str
    node: Node
    parallelism: int
    chain: Chain = field(default_factory=Chain)
    readers: list[Reader] = field(default_factory=list)
    inputs: list[tuple[str, str, GroupingKind, tuple[str, ...]]] = field(default_factory=list)
    spout_fields: tuple[str, ...] = ()
    combined: bool = False
    """An aggregate whose input is a processor bolt's partials (rule 4)."""


@dataclass(frozen=True)
class Handle:
    """Where a node's values come out: a group's chain entry, a step's output (and branch), or a spout (``where`` None)."""

    group: Group
    where: tuple[str, int, int] | None


class Compiler:
    """One compilation of a :class:`~streams.api.stream.StreamBuilder`'s graph (:func:`compile_graph`)."""

    def __init__(self, builder: StreamBuilder) -> None:
        self.builder = builder
        self.groups: list[Group] = []
        self.handles: dict[Node, Handle] = {}
        self.outputs: list[tuple[str, str, str, str]] = []
        self.ids: set[str] = set()
        self.ports = 0
        self.children: dict[Node, list[Node]] = {}
        """Each node's consumers (the graph's edges, reversed)."""
        for node in builder.nodes:
            for parent in node.parents:
                self.children.setdefault(parent, []).append(node)

    # -- groups ----------------------------------------------------------------------------------
    def _group(self, kind: str, node: Node, parallelism: int, cid: str | None = None, name: str | None = None) -> Group:
        """A new group; its id is ``cid``, else ``name`` (default: the node's) and a number."""
        if cid is None:
            name = name or node.name
            n = len([g for g in self.groups if g.kind != "spout"]) + 1
            cid = f"{name}{n}"
            while cid in self.ids:
                n += 1
                cid = f"{name}{n}"
        if cid in self.ids:
            raise TopologyError(f"[{node.name}] component id {cid!r} is used twice")
        self.ids.add(cid)
        group = Group(cid, kind, node, parallelism)
        self.groups.append(group)
        return group

    def _subscribe(
        self, src: Handle, pair: bool, dst: Group, kind: GroupingKind, fields: tuple[str, ...] = (), *, entry: int = 0, side: int = 0, combine: Any = None
    ) -> None:
        """``dst`` reads ``src``'s values: a port on ``src``'s chain (or the spout's stream), a subscription and a reader.

        ``combine``: the aggregator of ``dst``, a running aggregate, when a processor or window bolt may combine its values first (rule 4).
        """
        if src.where is None and kind == GroupingKind.FIELDS:  # a spout's fields are not the value: read it in a processor first
            src = self._processor_after(src.group.node, src.group.node)
        if src.where is None:  # a spout
            spout = src.group
            mapper: Callable[..., Any] | None = spout.node.args["value_mapper"]
            read = "mapped" if mapper is not None else ("value" if len(spout.spout_fields) == 1 else "tuple")
            dst.inputs.append((spout.id, DEFAULT_STREAM, kind, fields))
            dst.readers.append(Reader(spout.id, DEFAULT_STREAM, read, entry, side, mapper))
            return
        self.ports += 1
        combining = combine is not None and self.builder.combine and src.group.kind in ("processor", "window", "join", "cogroup")
        port = Port(f"s{self.ports}", pair, combine=combine if combining else None)
        dst.combined = dst.combined or combining
        self._attach(src, port)
        dst.inputs.append((src.group.id, port.stream, kind, fields))
        dst.readers.append(Reader(src.group.id, port.stream, "pair" if pair else "value", entry, side))

    @staticmethod
    def _attach(src: Handle, target: int | Port) -> None:
        assert src.where is not None
        src.group.chain.attach(src.where, target)

    def _processor_after(self, parent: Node, node: Node) -> Handle:
        """The handle stateless steps after ``parent`` attach to: ``parent``'s own, or, after a spout, a new processor bolt's entry."""
        h = self.handles[parent]
        if h.where is not None:
            return h
        group = self._group("processor", node, node.parallelism)
        entry = group.chain.entry()
        self._subscribe(h, parent.pair, group, GroupingKind.SHUFFLE, entry=entry)
        return Handle(group, ("entry", entry, 0))

    def _consumers(self, node: Node) -> list[Node]:
        """The operations that read ``node``'s values, looking through a ``window`` (a ``pass`` node)."""
        out: list[Node] = []
        for child in self.children.get(node, []):
            out.extend(self._consumers(child) if child.kind == "pass" else [child])
        return out

    def _head(self, kind: str, node: Node, entries: int = 1) -> Group:
        group = self._group(kind, node, node.parallelism)
        for _ in range(entries):
            group.chain.entry()
        self.handles[node] = Handle(group, ("entry", 0, 0))
        return group

    # -- nodes -----------------------------------------------------------------------------------
    def add(self, node: Node) -> None:
        """Place ``node`` (its parents are placed)."""
        kind = node.kind
        if kind == "spout":
            group = self._group("spout", node, node.parallelism, node.args["id"])
            declarer = OutputFieldsDeclarer(group.id)
            node.args["spout"].declare_output_fields(declarer)
            sdef = declarer.streams.get(DEFAULT_STREAM)
            if sdef is None:
                raise TopologyError(f"[new_stream] spout {group.id!r} declares no {DEFAULT_STREAM!r} stream (declared: {sorted(declarer.streams)})")
            group.spout_fields = sdef.fields
            self.handles[node] = Handle(group, None)
        elif kind in STATELESS:
            h = self._processor_after(node.parents[0], node)
            index = h.group.chain.add(Step(kind, node.args.get("fn"), node.args.get("preds", ())))
            self._attach(h, index)
            self.handles[node] = Handle(h.group, ("step", index, 0))
        elif kind == "pass":
            self.handles[node] = self.handles[node.parents[0]]
        elif kind == "arm":
            h = self.handles[node.parents[0]]
            assert h.where is not None
            self.handles[node] = Handle(h.group, ("step", h.where[1], node.branch or 0))
        elif kind == "repartition":
            upstream = self.handles[node.parents[0]]
            children = self._consumers(node)
            if upstream.where is not None and children and all(c.kind in REGROUPING for c in children):
                self.handles[node] = upstream  # a hop that runs nothing: what follows regroups, with this parallelism
                return
            first = children[0].name if len(children) == 1 and children[0].kind in STATELESS else None
            group = self._group("processor", node, node.parallelism, name=first)
            entry = group.chain.entry()
            self._subscribe(self.handles[node.parents[0]], node.pair, group, GroupingKind.SHUFFLE, entry=entry)
            self.handles[node] = Handle(group, ("entry", entry, 0))
        elif kind in ("aggregate", "window"):
            keyed = node.args["keyed"]
            group = self._head(kind, node)
            grouping, fields = (GroupingKind.FIELDS, ("key",)) if keyed else (GroupingKind.GLOBAL, ())
            combine = node.args["aggregator"] if kind == "aggregate" else None
            self._subscribe(self.handles[node.parents[0]], node.parents[0].pair, group, grouping, fields, combine=combine)
        elif kind in ("join", "cogroup"):
            group = self._head(kind, node)
            for side, parent in enumerate(node.parents):
                self._subscribe(self.handles[parent], True, group, GroupingKind.FIELDS, ("key",), side=side)
        elif kind == "state":
            group = self._head("state", node)
            self._subscribe(self.handles[node.parents[0]], True, group, GroupingKind.FIELDS, ("key",), side=UPDATE)
        elif kind == "state_query":
            query, state = node.parents
            group = self.handles[state].group
            entry = group.chain.entry()
            if query.pair:
                self._subscribe(self.handles[query], True, group, GroupingKind.FIELDS, ("key",), entry=entry, side=PAIR_QUERY)
            else:
                self._subscribe(self.handles[query], False, group, GroupingKind.FIELDS, ("value",), entry=entry, side=QUERY)
            self.handles[node] = Handle(group, ("entry", entry, 0))
        elif kind == "to":
            bolt = node.args["bolt"]
            group = self._group("to", node, node.args["parallelism"], node.args["id"] or f"{type(bolt).__name__.lower()}{len(self.groups)}")
            group.node = node
            self._subscribe(self.handles[node.parents[0]], node.parents[0].pair, group, GroupingKind.SHUFFLE)
        elif kind == "output":
            h = self.handles[node.parents[0]]
            if h.where is None:
                raise TopologyError("[set_output] needs a pair stream")
            self.ports += 1
            port = Port(f"s{self.ports}", True)
            self._attach(h, port)
            self.outputs.append((node.args["topic"], h.group.id, port.stream, node.args["merge"]))
        else:
            raise TopologyError(f"[{node.name}] unknown operation kind {kind!r}")

    # -- the topology ----------------------------------------------------------------------------
    def bolt(self, group: Group) -> Any:
        """The bolt object of a compiled group."""
        node, chain, readers = group.node, group.chain, group.readers
        if group.kind == "processor":
            return CombiningBolt(chain, readers) if any(p.combine is not None for p in chain.ports) else ProcessorBolt(chain, readers)
        if group.kind == "aggregate":
            return AggregateBolt(node.args["aggregator"], node.args["keyed"], chain, readers, combined=group.combined)
        if group.kind == "window":
            return WindowBolt(node.args["window"], "aggregate", chain, readers, keyed=node.args["keyed"], aggregator=node.args["aggregator"])
        if group.kind in ("join", "cogroup"):
            return WindowBolt(node.args["window"], group.kind, chain, readers, how=node.args["how"])
        if group.kind == "state":
            return StateBolt(node.args["initial"], node.args["update"], chain, readers)
        assert group.kind == "to"
        return node.args["bolt"]

    def topology(self, name: str, conf: dict[str, Any]) -> Topology:
        """Every group as a component of a :class:`~streams.model.topology.TopologyBuilder`, then ``create_topology``."""
        tb = TopologyBuilder()
        for g in self.groups:
            if g.kind == "spout":
                tb.set_spout(g.id, g.node.args["spout"], g.parallelism)
        for g in self.groups:
            if g.kind == "spout":
                continue
            declarer = tb.set_bolt(g.id, self.bolt(g), g.parallelism)
            for component, stream, kind, fields in g.inputs:
                if kind == GroupingKind.FIELDS:
                    declarer.fields_grouping(component, list(fields), stream)
                elif kind == GroupingKind.GLOBAL:
                    declarer.global_grouping(component, stream)
                else:
                    declarer.shuffle_grouping(component, stream)
        for topic, component, stream, merge in self.outputs:
            tb.set_output(topic, component, stream, key_field="key", value_field="value", merge=merge)
        return tb.create_topology(name, conf)


def compile_graph(builder: StreamBuilder, name: str, conf: dict[str, Any]) -> Topology:
    """The topology of ``builder``'s graph (module docstring). Raises TopologyError naming the operation at fault."""
    if not any(n.kind == "spout" for n in builder.nodes):
        raise TopologyError(f"[{name}] a stream topology needs new_stream(spout)")
    compiler = Compiler(builder)
    for node in builder.nodes:
        compiler.add(node)
    return compiler.topology(name, conf)
