"""Trident (Storm's ``TridentTopology``): exactly-once batch processing written as a stream of operations, compiled onto Squall's transactional topologies.

``new_stream(txid_name, spout)`` takes a :class:`~streams.TransactionalKafkaSpout` or
:class:`~streams.OpaqueKafkaSpout`; the operations after it compile to bolts of one
transactional topology (seed 003):

* ``each``, ``filter``, ``map``, ``flat_map``, ``project`` fuse into one ordinary bolt (a
  :class:`~streams.api.bolts.ProcessorBolt`: the chain of :mod:`streams.api.chain`); its emits
  join their batch.
* ``partition_by``, ``shuffle``, ``broadcast``, ``global_`` set the grouping of the next bolt.
* ``group_by(fields).persistent_aggregate(factory, aggregator, out_fields)`` is a committer
  :class:`~streams.BatchBolt` subscribed by fields: it combines a batch per key and applies it
  to the state at the batch's commit, in txid order (:mod:`streams.trident.bolts`).
* ``aggregate``, ``partition_aggregate``, ``group_by(...).aggregate`` and
  ``TridentTopology.join`` are batch bolts that emit at the end of each batch;
  ``state_query`` reads a state's committed values.

The word count, exactly once (``examples/wordcount_trident.py``)::

    >>> from streams import RecordTranslator, TransactionalKafkaSpout
    >>> from streams.testing import run_topology
    >>> from streams.trident import Count, StateFactory
    >>> t = TridentTopology()
    >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
    >>> words = lines.each(["line"], lambda line: line.lower().split(), ["word"])
    >>> counts = words.group_by(["word"]).persistent_aggregate(StateFactory("counts", "transactional"), Count(), ["count"])
    >>> run_topology(t.build("tw"), {"lines": ["the cat", "The dog"]}).output()
    {'cat': 1, 'dog': 1, 'the': 2}

A mistake names the operation and the field:

    >>> lines.each(["text"], str.split, ["word"])
    Traceback (most recent call last):
    ...
    streams.exceptions.TopologyError: [each] field 'text' is not in the stream's fields ['line']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from streams.api.bolts import ProcessorBolt, Reader
from streams.api.chain import Chain, Port, Step
from streams.exceptions import TopologyError
from streams.model.component import OutputFieldsDeclarer
from streams.model.spec import GroupingKind, Topology
from streams.model.spout import Spout
from streams.model.topology import TopologyBuilder
from streams.model.tuple import DEFAULT_STREAM
from streams.trident.bolts import BatchAggregateBolt, PersistentAggregateBolt, Selection, StateQueryBolt, TridentJoinBolt
from streams.trident.operations import (
    Aggregator,
    CombinerAggregator,
    Filter,
    Function,
    MapGet,
    QueryFunction,
    ReducerAggregator,
    StateFactory,
    TridentTuple,
    as_function,
)

Grouping = tuple[GroupingKind, tuple[str, ...]]


@dataclass(eq=False)
class _Group:
    """One component: the spout, a fused chain, or a batch bolt."""

    id: str
    kind: str
    parallelism: int = 1
    obj: Any = None
    chain: Chain = field(default_factory=Chain)
    readers: list[Reader] = field(default_factory=list)
    inputs: list[tuple[str, str, GroupingKind, tuple[str, ...]]] = field(default_factory=list)
    committer: bool = False


@dataclass(frozen=True)
class _Handle:
    group: _Group
    where: tuple[str, int, int] | None = None
    """A chain's entry or step; None: the component's ``default`` stream."""


class TridentTopology:
    """Builds a Trident topology (Storm's ``TridentTopology``); :meth:`build` compiles it."""

    def __init__(self) -> None:
        self.groups: list[_Group] = []
        self.spout: Spout | None = None
        self.state_outputs: list[StateFactory] = []
        self._ports = 0
        self._eaches: dict[tuple[str, int], Callable[..., Any]] = {}
        """Fused ``each`` steps of a callable with one output field: ``(component, step) -> the callable of the input values``."""
        self._projections: list[tuple[_Group, int, int, Callable[[Sequence[Any]], Any]]] = []
        """``(component, each step, project step, fused function)``: a ``project`` to the output field alone right after such an ``each``."""

    def new_stream(self, txid_name: str, spout: Spout) -> TridentStream:
        """The stream of ``spout``'s batches; ``txid_name`` is its component id (Storm's transactional id).

        Raises TopologyError for a second spout (a Trident topology has one) or a non-spout.

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> lines.fields
        ('line',)
        """
        if not isinstance(spout, Spout):
            raise TopologyError(f"[new_stream] needs a TransactionalKafkaSpout or OpaqueKafkaSpout, got {type(spout).__name__}")
        if self.spout is not None:
            raise TopologyError(f"[new_stream] {txid_name!r}: a Trident topology has one spout; merge streams of it instead")
        self.spout = spout
        declarer = OutputFieldsDeclarer(txid_name)
        spout.declare_output_fields(declarer)
        sdef = declarer.streams.get(DEFAULT_STREAM)
        if sdef is None:
            raise TopologyError(f"[new_stream] spout {txid_name!r} declares no {DEFAULT_STREAM!r} stream")
        group = self._group("spout", txid_name)
        group.obj = spout
        return TridentStream(self, _Handle(group), sdef.fields, None)

    @property
    def transactional(self) -> bool:
        """Its spout is transactional or opaque (batches with txids)."""
        return bool(getattr(self.spout, "transactional", False))

    @property
    def opaque(self) -> bool:
        """Its spout is opaque."""
        return bool(getattr(self.spout, "opaque", False))

    def _group(self, kind: str, cid: str) -> _Group:
        if any(g.id == cid for g in self.groups):
            n = 2
            while any(g.id == f"{cid}{n}" for g in self.groups):
                n += 1
            cid = f"{cid}{n}"
        group = _Group(cid, kind)
        self.groups.append(group)
        return group

    def _subscribe(self, src: TridentStream, dst: _Group, grouping: Grouping, *, entry: int = 0, side: int = 0) -> None:
        h = src.handle
        kind, fields = grouping
        if h.where is None:
            dst.inputs.append((h.group.id, DEFAULT_STREAM, kind, fields))
            dst.readers.append(Reader(h.group.id, DEFAULT_STREAM, "tuple", entry, side))
            return
        self._ports += 1
        port = Port(f"s{self._ports}", False, src.fields)
        _attach(h, port)
        dst.inputs.append((h.group.id, port.stream, kind, fields))
        dst.readers.append(Reader(h.group.id, port.stream, "tuple", entry, side))

    def _batch_bolt(
        self, op: str, name: str, src: TridentStream, bolt: Any, grouping: Grouping, fields: tuple[str, ...], committer: bool = False
    ) -> TridentStream:
        if not self.transactional:
            raise TopologyError(
                f"[{op}] needs a transactional stream: new_stream(txid, TransactionalKafkaSpout(...) or OpaqueKafkaSpout(...)), got {type(self.spout).__name__}"
            )
        group = self._group("bolt", name)
        group.obj = bolt
        group.committer = committer
        self._subscribe(src, group, grouping)
        return TridentStream(self, _Handle(group), fields, None)

    def merge(self, *streams: TridentStream) -> TridentStream:
        """One stream of every tuple of ``streams`` (Storm's ``merge``), with the first stream's field names.

        Raises TopologyError when the streams' field counts differ.

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> shouted = words.each(["word"], lambda w: [w.upper()], ["up"]).project(["up"])
        >>> both = t.merge(words.project(["word"]), shouted)
        >>> _ = both.group_by(["word"]).persistent_aggregate(StateFactory("n"), Count(), ["n"])
        >>> run_topology(t.build("merge"), {"lines": ["a b"]}).output()
        {'A': 1, 'B': 1, 'a': 1, 'b': 1}
        """
        if len(streams) < 2:
            raise TopologyError("[merge] needs two streams or more")
        width = len(streams[0].fields)
        for s in streams[1:]:
            if len(s.fields) != width:
                raise TopologyError(f"[merge] streams have {width} and {len(s.fields)} fields: {list(streams[0].fields)} vs {list(s.fields)}")
        group = self._group("chain", "merge")
        for s in streams:
            entry = group.chain.entry()
            self._subscribe(s, group, s.grouping or (GroupingKind.SHUFFLE, ()), entry=entry)
        shared = group.chain.roots[0]
        for e in range(1, len(streams)):
            group.chain.roots[e] = shared  # every input feeds what follows the merge: one list of targets
        return TridentStream(self, _Handle(group, ("entry", 0, 0)), streams[0].fields, None)

    def join(
        self, left: TridentStream, left_fields: Sequence[str], right: TridentStream, right_fields: Sequence[str], out_fields: Sequence[str]
    ) -> TridentStream:
        """Tuples of ``left`` and ``right`` with equal join fields in the same batch (Storm's ``join``, inner).

        The output holds the join fields, then the left's other fields, then the right's, named
        ``out_fields``. Raises TopologyError naming a join field a side lacks, or a wrong count of names.

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> lengths = words.each(["word"], lambda w: [len(w)], ["len"]).project(["word", "len"])
        >>> firsts = words.each(["word"], lambda w: [w[0]], ["first"]).project(["word", "first"])
        >>> joined = t.join(lengths, ["word"], firsts, ["word"], ["word", "len", "first"])
        >>> _ = joined.group_by(["first"]).persistent_aggregate(StateFactory("n"), Sum(), ["total"], input_fields=["len"])
        >>> run_topology(t.build("join"), {"lines": ["ant bee", "art"]}).output()
        {'a': 6, 'b': 3}
        """
        lk = left._indexes("join", left_fields)
        rk = right._indexes("join", right_fields)
        if len(lk) != len(rk):
            raise TopologyError(f"[join] joins {len(lk)} fields of the left with {len(rk)} of the right")
        lr = tuple(i for i in range(len(left.fields)) if i not in lk)
        rr = tuple(i for i in range(len(right.fields)) if i not in rk)
        width = len(lk) + len(lr) + len(rr)
        if len(out_fields) != width:
            raise TopologyError(f"[join] out_fields names {len(out_fields)} fields, the join gives {width}")
        if not self.transactional:
            raise TopologyError(f"[join] needs a transactional stream, got {type(self.spout).__name__}")
        group = self._group("bolt", "join")
        group.obj = TridentJoinBolt((("?", "?"), ("?", "?")), (lk, rk), (lr, rr), tuple(out_fields))
        self._subscribe(left, group, (GroupingKind.FIELDS, tuple(left_fields)), side=0)
        self._subscribe(right, group, (GroupingKind.FIELDS, tuple(right_fields)), side=1)
        group.obj.sides = ((group.inputs[0][0], group.inputs[0][1]), (group.inputs[1][0], group.inputs[1][1]))
        return TridentStream(self, _Handle(group), tuple(out_fields), None)

    def build(self, name: str, conf: dict[str, Any] | None = None) -> Topology:
        """The transactional topology. Raises TopologyError naming the component at fault.

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> _ = words.group_by(["word"]).persistent_aggregate(StateFactory("n"), Count(), ["n"])
        >>> topo = t.build("wc")
        >>> [c.id for c in topo.spouts], [b.id for b in topo.bolts]
        (['lines'], ['each', 'persistent_aggregate'])
        """
        if self.spout is None:
            raise TopologyError(f"[{name}] a Trident topology needs new_stream(txid, spout)")
        self._fuse_projections()
        tb = TopologyBuilder()
        for g in self.groups:
            if g.kind == "spout":
                tb.set_spout(g.id, g.obj)
        for g in self.groups:
            if g.kind == "spout":
                continue
            bolt: Any = ProcessorBolt(g.chain, g.readers) if g.kind == "chain" else g.obj
            declarer = tb.set_committer_bolt(g.id, bolt, g.parallelism) if g.committer else tb.set_bolt(g.id, bolt, g.parallelism)
            for component, stream, kind, fields in g.inputs:
                if kind == GroupingKind.FIELDS:
                    declarer.fields_grouping(component, list(fields), stream)
                elif kind == GroupingKind.GLOBAL:
                    declarer.global_grouping(component, stream)
                elif kind == GroupingKind.ALL:
                    declarer.all_grouping(component, stream)
                elif kind == GroupingKind.LOCAL_OR_SHUFFLE:
                    declarer.local_or_shuffle_grouping(component, stream)
                else:
                    declarer.shuffle_grouping(component, stream)
        for factory in self.state_outputs:
            tb.set_state_output(factory.name, kind=factory.kind)
        return tb.create_topology(name, dict(conf or {}))

    def _fuse_projections(self) -> None:
        """An ``each`` followed only by a ``project`` to its output field becomes one step making ``[value]`` lists (no line carried, no copy)."""
        for group, each, project, fused in self._projections:
            steps = group.chain.steps
            if steps[each].next == [[project]] and steps[each].fn is not fused:
                steps[each].fn = fused
                steps[each].singles = True
                steps[each].next = steps[project].next
                steps[project].next = [[]]


def _apply(call: Callable[..., Any], idx: tuple[int, ...]) -> Callable[[Sequence[Any]], Any]:
    """``call`` of the values at ``idx``; an iterable of its outputs (None: none)."""
    if len(idx) == 1:
        [i] = idx

        def one(values: Sequence[Any]) -> Any:
            got = call(values[i])
            return () if got is None else got

        return one

    def many(values: Sequence[Any]) -> Any:
        got = call(*[values[i] for i in idx])
        return () if got is None else got

    return many


def _attach(h: _Handle, target: int | Port) -> None:
    assert h.where is not None
    h.group.chain.attach(h.where, target)


class TridentStream:
    """A stream of Trident tuples with named fields (Storm's ``Stream``)."""

    def __init__(self, topology: TridentTopology, handle: _Handle, fields: tuple[str, ...], grouping: Grouping | None) -> None:
        self.topology = topology
        self.handle = handle
        self.fields = tuple(fields)
        self.grouping = grouping
        """A repartition asked for (``partition_by``, ``shuffle``...): the next operation starts a bolt with it."""

    def _indexes(self, op: str, fields: Sequence[str]) -> tuple[int, ...]:
        if isinstance(fields, str):
            fields = [fields]
        out = []
        for f in fields:
            if f not in self.fields:
                raise TopologyError(f"[{op}] field {f!r} is not in the stream's fields {list(self.fields)}")
            out.append(self.fields.index(f))
        return tuple(out)

    def _chain_handle(self, op: str) -> _Handle:
        """Where a stateless step attaches: this stream's chain, or a new fused bolt (after a spout, a batch bolt or a repartition)."""
        h = self.handle
        if h.where is not None and self.grouping is None:
            return h
        group = self.topology._group("chain", op)
        group.parallelism = h.group.parallelism if h.group.kind != "spout" else 1
        entry = group.chain.entry()
        self.topology._subscribe(self, group, self.grouping or (GroupingKind.SHUFFLE, ()), entry=entry)
        return _Handle(group, ("entry", entry, 0))

    def _step(self, op: str, kind: str, fn: Callable[..., Any], fields: tuple[str, ...]) -> TridentStream:
        h = self._chain_handle(op)
        index = h.group.chain.add(Step(kind, fn))
        _attach(h, index)
        return TridentStream(self.topology, _Handle(h.group, ("step", index, 0)), fields, None)

    # -- stateless, fused --------------------------------------------------------------------------
    def each(self, fields: Sequence[str], function: Any, out_fields: Sequence[str]) -> TridentStream:
        """Appends ``out_fields`` from ``function`` of ``fields`` (Storm's ``each``).

        ``function`` is a :class:`~streams.trident.Function`, or a callable of the field values
        returning an iterable of outputs (for one output field, each item is its value).
        Raises TopologyError naming a field the stream lacks, or an output field it has.

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> words.fields
        ('line', 'word')
        >>> _ = words.group_by(["word"]).persistent_aggregate(StateFactory("n"), Count(), ["n"])
        >>> run_topology(t.build("each"), {"lines": ["a b", "b"]}).output()
        {'a': 1, 'b': 2}
        """
        idx = self._indexes("each", fields)
        clash = [f for f in out_fields if f in self.fields]
        if clash:
            raise TopologyError(f"[each] output fields {clash} are already in the stream's fields {list(self.fields)}")
        names = tuple(self.fields[i] for i in idx)
        if len(out_fields) == 1 and not isinstance(function, Function) and callable(function):
            call = function

            def each(values: Sequence[Any]) -> list[list[Any]]:  # a callable with one output field: no tuple objects
                got = call(*[values[i] for i in idx])
                return [] if got is None else [[*values, x] for x in got]

            out = self._step("each", "flat_map", each, (*self.fields, *out_fields))
            assert out.handle.where is not None
            self.topology._eaches[(out.handle.group.id, out.handle.where[1])] = _apply(call, idx)
            return out
        else:
            run = as_function(function, out_fields)

            def each(values: Sequence[Any]) -> list[list[Any]]:
                return [[*values, *out] for out in run(TridentTuple([values[i] for i in idx], names))]

        return self._step("each", "flat_map", each, (*self.fields, *out_fields))

    def filter(self, predicate: Filter | Callable[..., bool], fields: Sequence[str] | None = None) -> TridentStream:
        """The tuples ``predicate`` keeps: a :class:`~streams.trident.Filter`, or a callable of the ``fields`` values (all fields by default).

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> _ = words.filter(lambda w: len(w) > 1, ["word"]).group_by(["word"]).persistent_aggregate(StateFactory("n"), Count(), ["n"])
        >>> run_topology(t.build("filter"), {"lines": ["a bee", "bee"]}).output()
        {'bee': 2}
        """
        idx = self._indexes("filter", fields) if fields is not None else tuple(range(len(self.fields)))
        names = tuple(self.fields[i] for i in idx)
        if isinstance(predicate, Filter):
            keep: Callable[[Sequence[Any]], bool] = lambda v: predicate.is_keep(TridentTuple([v[i] for i in idx], names))  # noqa: E731
        elif callable(predicate):
            keep = lambda v: predicate(*(v[i] for i in idx))  # noqa: E731
        else:
            raise TopologyError(f"[filter] needs a Filter or a callable, got {type(predicate).__name__}")
        return self._step("filter", "filter", keep, self.fields)

    def map(self, fn: Callable[..., Sequence[Any]], out_fields: Sequence[str] | None = None) -> TridentStream:
        """``fn(*values)`` as the new tuple's values (Storm's ``map``), named ``out_fields`` (default: the same fields).

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> _ = lines.map(lambda line: (line.upper(),)).group_by(["line"]).persistent_aggregate(StateFactory("n"), Count(), ["n"])
        >>> run_topology(t.build("map"), {"lines": ["ant", "Ant"]}).output()
        {'ANT': 2}
        """
        fields = tuple(out_fields) if out_fields is not None else self.fields
        return self._step("map", "map", lambda v: list(fn(*v)), fields)

    def flat_map(self, fn: Callable[..., Iterable[Sequence[Any]]], out_fields: Sequence[str] | None = None) -> TridentStream:
        """Each item of ``fn(*values)`` as a tuple (Storm's ``flatMap``), named ``out_fields`` (default: the same fields).

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> chars = lines.flat_map(lambda line: [(c,) for c in line], ["char"])
        >>> _ = chars.group_by(["char"]).persistent_aggregate(StateFactory("n"), Count(), ["n"])
        >>> run_topology(t.build("flat_map"), {"lines": ["aab"]}).output()
        {'a': 2, 'b': 1}
        """
        fields = tuple(out_fields) if out_fields is not None else self.fields
        return self._step("flat_map", "flat_map", lambda v: [list(x) for x in fn(*v)], fields)

    def project(self, fields: Sequence[str]) -> TridentStream:
        """Only ``fields``, in that order (Storm's ``project``).

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> words.project(["word"]).fields
        ('word',)
        """
        idx = self._indexes("project", fields)
        out = self._step("project", "map", lambda v: [v[i] for i in idx], tuple(fields))
        h, at = self.handle, out.handle.where
        inputs = self.topology._eaches.get((h.group.id, h.where[1])) if h.where is not None and h.where[0] == "step" and self.grouping is None else None
        if inputs is not None and at is not None and idx == (len(self.fields) - 1,):
            assert h.where is not None
            self.topology._projections.append((h.group, h.where[1], at[1], inputs))
        return out

    # -- repartitioning ----------------------------------------------------------------------------
    def _regroup(self, kind: GroupingKind, fields: tuple[str, ...] = ()) -> TridentStream:
        return TridentStream(self.topology, self.handle, self.fields, (kind, fields))

    def partition_by(self, fields: Sequence[str]) -> TridentStream:
        """Tuples with equal ``fields`` go to the same partition of the next bolt (Storm's ``partitionBy``: a fields grouping).

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> _ = words.partition_by(["word"]).each(["word"], lambda w: [len(w)], ["len"])
        >>> [(b.id, [(s.kind.value, s.fields) for s in b.inputs if s.kind.value != "direct"]) for b in t.build("p").bolts]
        [('each', [('shuffle', ())]), ('each2', [('fields', ('word',))])]
        """
        self._indexes("partition_by", fields)
        return self._regroup(GroupingKind.FIELDS, tuple(fields))

    def shuffle(self) -> TridentStream:
        """Spread evenly over the next bolt's partitions (Storm's ``shuffle``).

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> _ = words.shuffle().each(["word"], lambda w: [len(w)], ["len"])
        >>> [[s.kind.value for s in b.inputs if s.kind.value != "direct"] for b in t.build("s").bolts]
        [['shuffle'], ['shuffle']]
        """
        return self._regroup(GroupingKind.SHUFFLE)

    def broadcast(self) -> TridentStream:
        """Every tuple to every partition of the next bolt (Storm's ``broadcast``: an all grouping).

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> _ = words.broadcast().each(["word"], lambda w: [len(w)], ["len"])
        >>> [[s.kind.value for s in b.inputs if s.kind.value != "direct"] for b in t.build("b").bolts]
        [['shuffle'], ['all']]
        """
        return self._regroup(GroupingKind.ALL)

    def global_(self) -> TridentStream:
        """Every tuple to one partition (Storm's ``global``).

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> _ = words.global_().each(["word"], lambda w: [len(w)], ["len"])
        >>> [[s.kind.value for s in b.inputs if s.kind.value != "direct"] for b in t.build("g").bolts]
        [['shuffle'], ['global']]
        """
        return self._regroup(GroupingKind.GLOBAL)

    def parallelism_hint(self, n: int) -> TridentStream:
        """Run the bolt this stream comes out of on ``n`` executors (Storm's ``parallelismHint``).

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"]).parallelism_hint(3)
        >>> [(b.id, b.parallelism) for b in t.build("ph").bolts]
        [('each', 3)]
        """
        if n < 1:
            raise TopologyError(f"[parallelism_hint] must be >= 1, got {n}")
        if self.handle.group.kind == "spout":
            raise TopologyError("[parallelism_hint] a transactional spout has one executor")
        self.handle.group.parallelism = n
        return self

    # -- aggregation -------------------------------------------------------------------------------
    def group_by(self, fields: Sequence[str]) -> GroupedStream:
        """Groups by ``fields`` for ``aggregate`` or ``persistent_aggregate`` (Storm's ``groupBy``).

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> _ = words.group_by(["word"]).persistent_aggregate(StateFactory("n"), Count(), ["n"])
        >>> run_topology(t.build("gb"), {"lines": ["a b a"]}).output()
        {'a': 2, 'b': 1}
        """
        return GroupedStream(self, tuple(fields), self._indexes("group_by", fields))

    def _selection(self, op: str, key: tuple[int, ...], input_fields: Sequence[str] | None) -> Selection:
        idx = self._indexes(op, input_fields) if input_fields is not None else tuple(range(len(self.fields)))
        return Selection(key, idx, tuple(self.fields[i] for i in idx))

    def aggregate(self, aggregator: Any, out_fields: Sequence[str], input_fields: Sequence[str] | None = None) -> TridentStream:
        """One aggregate per batch over all partitions (Storm's ``aggregate``): emits ``out_fields`` at the end of each batch.

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> total = words.aggregate(Count(), ["n"]).each(["n"], lambda n: ["words"], ["k"])
        >>> _ = total.group_by(["k"]).persistent_aggregate(StateFactory("n"), Sum(), ["total"], input_fields=["n"])
        >>> run_topology(t.build("agg"), {"lines": ["a b a", "c"]}).output()
        {'words': 4}
        """
        _check_aggregator("aggregate", aggregator)
        bolt = BatchAggregateBolt(self._selection("aggregate", (), input_fields), aggregator, tuple(out_fields))
        return self.topology._batch_bolt("aggregate", "aggregate", self, bolt, (GroupingKind.GLOBAL, ()), tuple(out_fields))

    def partition_aggregate(self, aggregator: Any, out_fields: Sequence[str], input_fields: Sequence[str] | None = None) -> TridentStream:
        """One aggregate per batch and partition (Storm's ``partitionAggregate``).

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> per_partition = words.partition_aggregate(Count(), ["n"]).each(["n"], lambda n: ["words"], ["k"])
        >>> _ = per_partition.group_by(["k"]).persistent_aggregate(StateFactory("n"), Sum(), ["total"], input_fields=["n"])
        >>> run_topology(t.build("pagg"), {"lines": ["a b a", "c"]}).output()
        {'words': 4}
        """
        _check_aggregator("partition_aggregate", aggregator)
        bolt = BatchAggregateBolt(self._selection("partition_aggregate", (), input_fields), aggregator, tuple(out_fields))
        grouping = self.grouping or (GroupingKind.LOCAL_OR_SHUFFLE, ())
        return self.topology._batch_bolt("partition_aggregate", "partition_aggregate", self, bolt, grouping, tuple(out_fields))

    def state_query(
        self, state: TridentState, query: QueryFunction | None = None, out_fields: Sequence[str] = ("value",), key_fields: Sequence[str] | None = None
    ) -> TridentStream:
        """Appends ``out_fields`` read from ``state`` for each tuple's key (Storm's ``stateQuery``; :class:`~streams.trident.MapGet` by default).

        The key is ``key_fields`` (default: the fields ``state`` was grouped by). The values
        read are the last committed ones.

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> counts = words.group_by(["word"]).persistent_aggregate(StateFactory("counts"), Count(), ["count"])
        >>> asked = words.filter(lambda w: w.startswith("?"), ["word"]).each(["word"], lambda w: [w[1:]], ["asked"])
        >>> asked.state_query(counts, out_fields=["count"], key_fields=["asked"]).project(["asked", "count"]).fields
        ('asked', 'count')
        """
        if not isinstance(state, TridentState):
            raise TopologyError(f"[state_query] needs the TridentState of persistent_aggregate, got {type(state).__name__}")
        keys = tuple(key_fields) if key_fields is not None else state.key_fields
        idx = self._indexes("state_query", keys)
        bolt = StateQueryBolt(state.factory, idx, self.fields, query or MapGet(), tuple(out_fields))
        group = self.topology._group("bolt", "state_query")
        group.obj = bolt
        self.topology._subscribe(self, group, self.grouping or (GroupingKind.SHUFFLE, ()))
        return TridentStream(self.topology, _Handle(group), (*self.fields, *out_fields), None)


def _check_aggregator(op: str, aggregator: Any) -> None:
    if not isinstance(aggregator, CombinerAggregator | ReducerAggregator | Aggregator):
        raise TopologyError(f"[{op}] needs a CombinerAggregator, ReducerAggregator or Aggregator (streams.trident), got {type(aggregator).__name__}")


class GroupedStream:
    """A stream grouped by fields (Storm's ``GroupedStream``)."""

    def __init__(self, stream: TridentStream, fields: tuple[str, ...], idx: tuple[int, ...]) -> None:
        self.stream = stream
        self.fields = fields
        self.idx = idx

    def aggregate(self, aggregator: Any, out_fields: Sequence[str], input_fields: Sequence[str] | None = None) -> TridentStream:
        """Per group and batch: emits ``group fields + out_fields`` at the end of each batch.

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> per_batch = words.group_by(["word"]).aggregate(Count(), ["n"])
        >>> per_batch.fields
        ('word', 'n')
        >>> _ = per_batch.group_by(["word"]).persistent_aggregate(StateFactory("n"), Sum(), ["total"], input_fields=["n"])
        >>> run_topology(t.build("ga"), {"lines": ["a b a"]}).output()
        {'a': 2, 'b': 1}
        """
        _check_aggregator("aggregate", aggregator)
        s = self.stream
        bolt = BatchAggregateBolt(s._selection("aggregate", self.idx, input_fields), aggregator, (*self.fields, *out_fields))
        return s.topology._batch_bolt("aggregate", "aggregate", s, bolt, (GroupingKind.FIELDS, self.fields), (*self.fields, *out_fields))

    def persistent_aggregate(
        self, factory: StateFactory, aggregator: CombinerAggregator, out_fields: Sequence[str], input_fields: Sequence[str] | None = None
    ) -> TridentState:
        """The aggregate per group, kept in ``factory``'s state (Storm's ``persistentAggregate``).

        The state is updated exactly once per batch, at its commit, in txid order.

        Raises TopologyError (naming ``persistent_aggregate``) on a stream that is not
        transactional, a transactional state on an opaque spout, or an aggregator that is not a
        :class:`~streams.trident.CombinerAggregator`.

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> _ = words.group_by(["word"]).persistent_aggregate(StateFactory("counts", "transactional"), Count(), ["count"])
        >>> run_topology(t.build("pa"), {"lines": ["the cat", "the dog"]}).output()
        {'cat': 1, 'dog': 1, 'the': 2}
        """
        s = self.stream
        topo = s.topology
        if not isinstance(factory, StateFactory):
            raise TopologyError(f"[persistent_aggregate] needs a StateFactory(name, kind), got {type(factory).__name__}")
        if not isinstance(aggregator, CombinerAggregator):
            raise TopologyError(
                f"[persistent_aggregate] needs a CombinerAggregator (it is combined per batch before the state), got {type(aggregator).__name__}"
            )
        if topo.transactional and topo.opaque and factory.kind == "transactional":
            raise TopologyError(
                f"[persistent_aggregate] state {factory.name!r} is transactional but the spout is opaque: "
                "a replayed batch may hold other tuples; use StateFactory(..., 'opaque')"
            )
        bolt = PersistentAggregateBolt(s._selection("persistent_aggregate", self.idx, input_fields), aggregator, factory)
        out = topo._batch_bolt("persistent_aggregate", "persistent_aggregate", s, bolt, (GroupingKind.FIELDS, self.fields), (), committer=True)
        topo.state_outputs.append(factory)
        return TridentState(out.handle.group, factory, self.fields, tuple(out_fields))


class TridentState:
    """The state of ``persistent_aggregate`` (Storm's ``TridentState``): query it with :meth:`TridentStream.state_query`."""

    def __init__(self, group: _Group, factory: StateFactory, key_fields: tuple[str, ...], value_fields: tuple[str, ...]) -> None:
        self.group = group
        self.factory = factory
        self.key_fields = key_fields
        self.value_fields = value_fields

    def parallelism_hint(self, n: int) -> TridentState:
        """Run the committer on ``n`` executors.

        >>> from streams import RecordTranslator, TransactionalKafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.trident import Count, Sum
        >>> t = TridentTopology()
        >>> lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
        >>> words = lines.each(["line"], str.split, ["word"])
        >>> _ = words.group_by(["word"]).persistent_aggregate(StateFactory("n"), Count(), ["n"]).parallelism_hint(2)
        >>> [(b.id, b.parallelism) for b in t.build("ph").bolts]
        [('each', 1), ('persistent_aggregate', 2)]
        """
        if n < 1:
            raise TopologyError(f"[parallelism_hint] must be >= 1, got {n}")
        self.group.parallelism = n
        return self
