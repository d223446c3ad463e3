"""The batch bolts Trident compiles to: per-batch aggregation, the committer of ``persistent_aggregate``, state queries and joins.

Storm's ``AggregateProcessor``, ``PartitionPersistProcessor``, ``StateQueryProcessor`` and ``JoinerMultiReducer``.

Each is an ordinary :class:`~streams.BatchBolt` (or :class:`~streams.BasicBolt`): the
transactional spout wraps it in a CoordinatedBolt, so a batch's tuples reach it, its
``finish_batch`` runs once the batch is complete, and a committer's only in the commit phase,
strictly in txid order (seed 003). Each batch gets a fresh copy of the bolt, so its per-batch
maps start empty. ``persistent_aggregate`` combines a batch's tuples per key
in memory, then applies them to the state in one transaction with the txid: a replayed batch
is skipped (``transactional``) or re-applied over the previous value (``opaque``), so the
state is exact.
"""

from __future__ import annotations

import operator
from typing import Any

from typing_extensions import override

from streams.api.partials import hashable
from streams.model.batch import BatchAttempt, BatchBolt, BatchOutputCollector, Committer
from streams.model.bolt import BasicBolt, BasicOutputCollector
from streams.model.component import OutputFieldsDeclarer
from streams.model.context import TopologyContext
from streams.model.tuple import Tuple
from streams.trident.operations import (
    Aggregator,
    CombinerAggregator,
    Count,
    QueryFunction,
    ReducerAggregator,
    StateFactory,
    Sum,
    TridentCollector,
    TridentTuple,
)

_MISSING = object()


def _key(values: list[Any], idx: tuple[int, ...]) -> Any:
    """The key of a tuple: one field's value, or the tuple of several (a JSON list back as a tuple)."""
    if len(idx) == 1:
        return hashable(values[idx[0]])
    return tuple(hashable(values[i]) for i in idx)


class Selection:
    """Which fields of an input an operation reads: the group key's positions and the operation's input fields."""

    def __init__(self, key_idx: tuple[int, ...], in_idx: tuple[int, ...], in_fields: tuple[str, ...]) -> None:
        self.key_idx = key_idx
        self.in_idx = in_idx
        self.in_fields = in_fields

    def input(self, values: list[Any]) -> TridentTuple:
        """The operation's input tuple."""
        return TridentTuple([values[i] for i in self.in_idx], self.in_fields)


class BatchAggregateBolt(BatchBolt):
    """``aggregate``, ``partition_aggregate`` and ``group_by(...).aggregate`` within one batch; emits ``key fields + output fields`` at ``finish_batch``."""

    def __init__(self, sel: Selection, aggregator: Any, fields: tuple[str, ...]) -> None:
        self.sel = sel
        self.aggregator = aggregator
        self.fields = fields
        self.groups: dict[Any, Any] = {}
        self.keys: dict[Any, list[Any]] = {}

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(list(self.fields))

    @override
    def execute(self, tuple: Tuple) -> None:
        values = tuple.values
        key = _key(values, self.sel.key_idx) if self.sel.key_idx else None
        if key not in self.keys:
            self.keys[key] = [values[i] for i in self.sel.key_idx]
        t = self.sel.input(values)
        agg = self.aggregator
        acc = self.groups.get(key, _MISSING)
        if isinstance(agg, CombinerAggregator):
            v = agg.init(t)
            self.groups[key] = v if acc is _MISSING else agg.combine(acc, v)
        elif isinstance(agg, ReducerAggregator):
            self.groups[key] = agg.reduce(agg.init() if acc is _MISSING else acc, t)
        else:
            assert isinstance(agg, Aggregator)
            if acc is _MISSING:
                c = TridentCollector()
                acc = self.groups[key] = (agg.init(self.attempt.txid, c), c)
            agg.aggregate(acc[0], t, acc[1])

    @override
    def finish_batch(self) -> None:
        agg = self.aggregator
        if not self.groups and not self.sel.key_idx and isinstance(agg, CombinerAggregator):
            self.collector.emit([agg.zero()])  # a global aggregate of an empty batch (Storm's rule)
            return
        for key, acc in self.groups.items():
            head = self.keys[key]
            if isinstance(agg, Aggregator):
                state, c = acc
                agg.complete(state, c)
                for out in c.out:
                    self.collector.emit([*head, *out])
            else:
                self.collector.emit([*head, acc])


class PersistentAggregateBolt(BatchBolt, Committer):
    """``group_by(...).persistent_aggregate``: a batch's :class:`CombinerAggregator` results per key, applied to the state at the commit, in txid order.

    Steps at ``finish_batch`` (the commit phase):

    1. the batch's tuples were combined per key in memory (``execute``);
    2. the state applies them in one transaction with the batch's txid
       (:meth:`streams.state.semantics.State.apply`): a txid already applied is skipped
       (transactional) or applied again over the previous value (opaque).
    """

    def __init__(self, sel: Selection, aggregator: CombinerAggregator, factory: StateFactory) -> None:
        self.sel = sel
        self.aggregator = aggregator
        self.factory = factory
        self.updates: dict[Any, Any] = {}
        self.state: Any = None
        self._counting = type(aggregator) is Count
        self._one = sel.key_idx[0] if self._counting and len(sel.key_idx) == 1 else None
        """The key's one field, for Count's fast path."""

    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: BatchOutputCollector, attempt: BatchAttempt) -> None:
        super().prepare(conf, context, collector, attempt)
        combine = operator.add if type(self.aggregator) in (Count, Sum) else self.aggregator.combine  # theirs is a + b
        self.state = context.state(self.factory.name, self.factory.kind, combine=combine)

    @override
    def execute(self, tuple: Tuple) -> None:
        # 1. combine the batch per key
        values = tuple.values
        updates = self.updates
        if self._one is not None:  # Count on one field: a plain int per key (the hot path of a word count)
            key = values[self._one]
            if type(key) is list:
                key = hashable(key)
            updates[key] = updates.get(key, 0) + 1
            return
        key = _key(values, self.sel.key_idx)
        if self._counting:
            updates[key] = updates.get(key, 0) + 1
            return
        agg = self.aggregator
        v = agg.init(self.sel.input(values))
        acc = updates.get(key, _MISSING)
        updates[key] = v if acc is _MISSING else agg.combine(acc, v)

    @override
    def finish_batch(self) -> None:
        # 2. apply to the state with the txid, in one transaction
        self.state.apply(self.attempt.txid, self.updates.items())


class StateQueryBolt(BasicBolt):
    """``state_query``: each tuple's key looked up in a Trident state (last committed values), ``input fields + output fields`` emitted."""

    def __init__(self, factory: StateFactory, key_idx: tuple[int, ...], fields: tuple[str, ...], query: QueryFunction, out_fields: tuple[str, ...]) -> None:
        self.factory = factory
        self.key_idx = key_idx
        self.in_fields = fields
        self.query = query
        self.out_fields = out_fields
        self.state: Any = None

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare([*self.in_fields, *self.out_fields])

    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self.state = context.state(self.factory.name, self.factory.kind)

    @override
    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:
        values = tuple.values
        [result] = self.query.query(self.state, [_key(values, self.key_idx)])
        c = TridentCollector()
        self.query.execute(TridentTuple(values, self.in_fields), result, c)
        for out in c.out:
            collector.emit([*values, *out])


class TridentJoinBolt(BatchBolt):
    """``TridentTopology.join``: an inner join of two streams' tuples within each batch, on equal join fields.

    Output: the join fields, then the left's other fields, then the right's (Storm's order),
    under the names given. ``sides`` are the two inputs, ``(component, stream)`` each.
    """

    def __init__(
        self,
        sides: tuple[tuple[str, str], tuple[str, str]],
        key_idx: tuple[tuple[int, ...], tuple[int, ...]],
        rest_idx: tuple[tuple[int, ...], tuple[int, ...]],
        fields: tuple[str, ...],
    ) -> None:
        self.sides = sides
        self.key_idx = key_idx
        self.rest_idx = rest_idx
        self.fields = fields
        self.rows: tuple[dict[Any, list[list[Any]]], dict[Any, list[list[Any]]]] = ({}, {})

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(list(self.fields))

    @override
    def execute(self, tuple: Tuple) -> None:
        side = self.sides.index((tuple.source_component, tuple.stream))
        values = tuple.values
        self.rows[side].setdefault(_key(values, self.key_idx[side]), []).append(values)

    @override
    def finish_batch(self) -> None:
        left, right = self.rows
        for key, lefts in left.items():
            for a in lefts:
                for b in right.get(key, ()):
                    self.collector.emit([*(a[i] for i in self.key_idx[0]), *(a[i] for i in self.rest_idx[0]), *(b[i] for i in self.rest_idx[1])])
