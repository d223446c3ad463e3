"""The bolts the Stream API compiles to: ordinary Squall bolts with a fused chain after them.

Storm's ``ProcessorBolt``, ``WindowedProcessorBolt`` and ``StatefulProcessorBolt``:

* :class:`ProcessorBolt`: a :class:`~streams.BasicBolt` running the fused stateless steps;
  every emit is anchored to the input, which is acked after (Storm's BasicBolt rule).
* :class:`CombiningBolt`: a processor bolt whose values for a by-key aggregate are combined
  per key before they cross Kafka (a map-side combine); it sends one partial per key per tick,
  anchored to the tuples folded into it, then acks them.
* :class:`AggregateBolt`: a running aggregate per key (or one, for a global ``aggregate``),
  held in memory. It forwards each changed key's latest result on its tick, anchored to the
  tuples that changed it, then acks them (Storm forwards on every tuple; Squall coalesces a
  tick's updates of a key into one, the same last value with fewer tuples). Results that only
  go to outputs are written unanchored, before the acks.
* :class:`WindowBolt`: a :class:`~streams.WindowedBolt` that aggregates, joins or
  cogroups each window by key; its emits are anchored to the window's tuples, acked when
  they expire.
* :class:`StateBolt`: a :class:`~streams.StatefulBolt` for ``update_state_by_key`` and
  ``state_query``, on the checkpointed :class:`~streams.KeyValueState`.

What follows the head of a bolt (the stateless steps after an aggregation, a join or the
state) runs in the same bolt, through its :class:`~streams.api.chain.Chain`.

Every input is read into a *value* by its :class:`Reader`: ``values[0]`` for a stream,
``(key, value)`` for a pair stream (a list key from JSON becomes a tuple, so it can key a
dict), or the spout's tuple through ``value_mapper``.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from typing_extensions import override

from streams.api.aggregators import CombinerAggregator, Counter
from streams.api.chain import Chain, Forward, Port
from streams.api.partials import Partials, hashable, send_partials
from streams.api.windows import Window
from streams.model.bolt import BasicBolt, BasicOutputCollector, Bolt
from streams.model.collector import OutputCollector
from streams.model.component import OutputFieldsDeclarer
from streams.model.context import TopologyContext
from streams.model.stateful import StatefulBolt
from streams.model.tuple import Tuple
from streams.model.windowed import TupleWindow, WindowedBolt
from streams.state.keyvalue import KeyValueState
from streams.windowing.spec import WindowSpec

log = logging.getLogger("squall.api")

PAIR_FIELDS = ("key", "value")
"""A pair stream's fields."""

VALUE_FIELDS = ("value",)
"""A stream's field."""

TICK_S = 0.1
"""How often an :class:`AggregateBolt` forwards its changed keys (seconds; the hand-written word count's tick)."""

Route = tuple[Callable[[Tuple], Any], Forward]
"""An input's reader and the chain entry its values run through."""

UPDATE, QUERY, PAIR_QUERY = 0, 1, 2
"""A :class:`StateBolt` input's ``side``: updates, queries by value, queries by a pair's key."""


@dataclass(frozen=True)
class Reader:
    """How one input ``(component, stream)`` becomes a value: ``kind`` is ``value``, ``pair``, ``tuple`` or ``mapped`` (``mapper(tuple)``).

    ``entry`` is the chain entry (or head input) it feeds; ``side`` the join side (0 left, 1 right) or, for a :class:`StateBolt`, 0 update and 1 query.
    """

    component: str
    stream: str
    kind: str
    entry: int = 0
    side: int = 0
    mapper: Callable[[Tuple], Any] | None = None

    def function(self) -> Callable[[Tuple], Any]:
        """:meth:`read` specialised to this reader's kind (one call less per tuple on the hot path)."""
        kind = self.kind
        if kind == "value":
            return _first_value
        if kind == "pair":
            return _pair_value
        return self.read

    def read(self, t: Tuple) -> Any:
        """The value ``t`` carries."""
        kind = self.kind
        if kind == "value":
            return t.values[0]
        if kind == "pair":
            v = t.values
            k = v[0]
            return (hashable(k) if type(k) is list else k), v[1]
        if kind == "tuple":
            return tuple(t.values)
        assert self.mapper is not None
        return self.mapper(t)


def _first_value(t: Tuple) -> Any:
    return t.values[0]


def _pair_value(t: Tuple) -> tuple[Any, Any]:
    v = t.values
    k = v[0]
    return (hashable(k) if type(k) is list else k), v[1]


def _declare_ports(chain: Chain, declarer: OutputFieldsDeclarer) -> None:
    for port in chain.ports:
        declarer.declare(list(port.fields or (PAIR_FIELDS if port.pair else VALUE_FIELDS)), stream=port.stream)


class _ChainOwner:
    """What the four bolts share: their inputs' readers and the chain after their head."""

    def _init_chain(self, chain: Chain, readers: list[Reader]) -> None:
        self.chain = chain
        self.readers = readers
        self._by_input: dict[tuple[str, str], Reader] = {(r.component, r.stream): r for r in readers}
        self._entries: list[Forward] = []

    def reader(self, t: Tuple) -> Reader:
        """The reader of ``t``'s input."""
        return self._by_input[(t.source_component, t.stream)]

    def _routes(self, entries: list[Forward]) -> tuple[dict[tuple[str, str], Route], Route | None]:
        """Per input ``(component, stream)``, its reader and the chain entry it runs; and that pair alone when there is one input (most bolts)."""
        route = {(r.component, r.stream): (r.function(), entries[r.entry]) for r in self.readers}
        return route, next(iter(route.values())) if len(route) == 1 else None


class ProcessorBolt(BasicBolt, _ChainOwner):
    """Fused stateless steps (Storm's ``ProcessorBolt``): each input value runs through the chain; every emit is anchored to the input.

    A user function that raises fails the tuple (it is replayed, then dead-lettered), with the
    component, topic, partition and offset in the error (the executor's rule for any bolt).
    """

    def __init__(self, chain: Chain, readers: list[Reader]) -> None:
        self._init_chain(chain, readers)
        self._collector: BasicOutputCollector | None = None
        self._route: dict[tuple[str, str], Route] = {}
        self._only: Route | None = None
        """The one input's reader and chain, when there is one input (most bolts)."""

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        _declare_ports(self.chain, declarer)

    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self._collector = None  # linked on the first execute, to that collector's emit

    def _link(self, collector: BasicOutputCollector) -> None:
        """The chain's closures, emitting straight through ``collector`` (the executor passes the same one every time)."""
        self._route, self._only = self._routes(self.chain.link_entries(collector.emit))
        self._collector = collector

    @override
    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:
        if collector is not self._collector:
            self._link(collector)
        read, forward = self._only or self._route[(tuple.source_component, tuple.stream)]
        forward(read(tuple))


class CombiningBolt(Bolt, _ChainOwner):
    """Fused stateless steps (as :class:`ProcessorBolt`) whose values for a by-key aggregate are combined before they are sent: a map-side combine.

    Storm's Stream API combines each partition before ``partitionBy(KEY)`` when the stream is
    windowed (``PairStream.combineByKey``: ``combinePartition``, then the aggregate bolt's
    ``MergeAggregateByKeyProcessor``). Squall does it for running aggregates too, per tick
    (:data:`TICK_S` seconds), so that one tuple per key per tick crosses Kafka instead of one
    per value: the Shakespeare word count sends about 5 times fewer tuples to its counters.
    The aggregate merges the partials (``aggregator.merge``); as in Storm, ``init()`` must be
    the identity of ``merge`` (a partial starts from it).

    Each input runs through the chain. What reaches a combining port is staged, and folded
    into the port's partial for its key (``aggregator.apply``) once the whole chain ran
    without raising: a tuple whose user function raises is failed and folds nothing, so its
    replay counts once. Other ports emit at once, anchored to the input. On each tick:

    1. **Send the partials.** Per port and key, ``[key, partial]`` (``[partial]`` for a global
       aggregate) is emitted anchored to every tuple folded into it, so each of their trees
       holds the partial's edge (Storm's multi-anchoring). A partial that cannot be emitted
       fails the tuples folded into it.
    2. **Ack the tick's tuples**, in arrival order: a tuple is acked only once everything
       made of it is on its way, and its tree completes when the aggregates have acked the partials.

    A clean stop (a rebalance) runs the tick's steps, so nothing is left to replay.
    ``StreamBuilder(combine=False)`` compiles without it (one tuple per value, no extra tick of latency).
    """

    def __init__(self, chain: Chain, readers: list[Reader]) -> None:
        self._init_chain(chain, readers)
        self.out = _Anchored()
        self._combines: list[Partials] = []
        self._route: dict[tuple[str, str], Route] = {}
        self._only: Route | None = None
        self._unacked: list[Tuple] = []
        """The tuples run since the last tick, in arrival order (acked at the tick, step 2)."""

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        _declare_ports(self.chain, declarer)

    @override
    def get_component_configuration(self) -> dict[str, Any]:
        return {"topology.tick.tuple.freq.secs": TICK_S}

    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.out.collector = collector
        self._combines = [Partials(p) for p in self.chain.ports if p.combine is not None]
        sinks: dict[str, Forward] = {c.stream: c.staged.append for c in self._combines}
        self._route, self._only = self._routes(self.chain.link_entries(self.out.emit, sinks))

    @override
    def execute(self, tuple: Tuple) -> None:
        if tuple.is_tick:
            self.flush()
            return
        read, forward = self._only or self._route[(tuple.source_component, tuple.stream)]
        self.out.anchors = tuple
        try:
            forward(read(tuple))
        except BaseException:
            for c in self._combines:
                c.staged.clear()
            raise
        for c in self._combines:
            if c.staged:
                c.fold(tuple)
        self._unacked.append(tuple)

    def flush(self) -> None:
        """The tick (class docstring): send every partial, anchored to its tuples (step 1), then ack the tick's tuples (step 2)."""
        collector = self.collector
        # 1. Send the partials.
        send_partials(collector, self._combines)
        # 2. Ack the tick's tuples (a failed one is settled: its ack does nothing).
        unacked, self._unacked = self._unacked, []
        ack = collector.ack
        for t in unacked:
            ack(t)

    @override
    def cleanup(self) -> None:
        self.flush()


class _Anchored:
    """Emits through a bolt's collector anchored to the tuples the bolt is forwarding for."""

    def __init__(self) -> None:
        self.collector: OutputCollector | None = None
        self.anchors: list[Tuple] | Tuple | None = None

    def emit(self, values: list[Any], stream: str) -> None:
        assert self.collector is not None
        self.collector.emit(values, anchors=self.anchors, stream=stream)


class AggregateBolt(Bolt, _ChainOwner):
    """A running aggregate per key, in memory (Storm's ``AggregateByKeyProcessor``, not windowed).

    On each tick it forwards ``(key, result)`` for every key changed since the last tick
    (``result`` only, for a global aggregate), anchored to the tuples that changed it, and
    then acks them: a tuple is acked once its effect has been emitted. On a clean stop (a
    rebalance) it forwards what it holds. The aggregates themselves are not checkpointed: a
    task that restarts starts from nothing (use ``update_state_by_key`` or Trident for
    totals that survive restarts).

    A *leaf* aggregate, whose results go straight to outputs (``set_output``) that no bolt
    subscribes to, emits them unanchored and then acks its tuples in arrival order, as the
    hand-written word count does: anchors would only be carried to a sink that tracks
    nothing, and the executor sends the acks only once the outputs produced before them
    are delivered (:meth:`streams.runtime.bolt.BoltExecutor._flush`, step 1), so a tuple is
    still acked only once its key's result is durable. A result that cannot be emitted
    fails the tuples of its key alone, either way.

    Args:
      aggregator: the :class:`~streams.api.aggregators.CombinerAggregator`.
      keyed: inputs are pairs ``(key, value)``; else values, aggregated globally.
      chain, readers: what follows the aggregate, and how inputs are read (:class:`Reader`).
      combined: the inputs are a :class:`CombiningBolt`'s partials, merged into the running
        aggregate (Storm's ``MergeAggregateByKeyProcessor``).
    """

    def __init__(self, aggregator: CombinerAggregator, keyed: bool, chain: Chain, readers: list[Reader], *, combined: bool = False) -> None:
        self._init_chain(chain, readers)
        self.aggregator = aggregator
        self.keyed = keyed
        self.combined = combined
        """Its inputs are partials from a :class:`CombiningBolt`, merged (``aggregator.merge``), not values."""
        self.out = _Anchored()
        self.acc: dict[Any, Any] = {}
        self.pending: dict[Any, list[Tuple]] = {}
        self._read: Callable[[Tuple], Any] | None = None
        """The one input's reader, when there is one input."""
        self._counting = isinstance(aggregator, Counter)
        """``count_by_key``: the count kept as a plain int (the hot path of a word count)."""
        self._leaf: list[Port] | None = None
        """A leaf aggregate's ports (class docstring), set in ``prepare``; None when a bolt reads its results."""
        self._changed: dict[Any, None] = {}
        """A leaf aggregate's keys changed since the last tick, in order of first change."""
        self._unacked: list[Tuple] = []
        """A leaf aggregate's tuples since the last tick, in arrival order."""

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        _declare_ports(self.chain, declarer)

    @override
    def get_component_configuration(self) -> dict[str, Any]:
        return {"topology.tick.tuple.freq.secs": TICK_S}

    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.out.collector = collector
        self._entries = self.chain.link_entries(self.out.emit)
        self._read = self.readers[0].function() if len(self.readers) == 1 else None
        self._leaf = _leaf_ports(self.chain, context)

    @override
    def execute(self, tuple: Tuple) -> None:
        if tuple.is_tick:
            self.flush()
            return
        read = self._read
        v = read(tuple) if read is not None else self.reader(tuple).read(tuple)
        if self.keyed:
            key, value = v
        else:
            key, value = None, v
        if self._counting:
            self.acc[key] = self.acc.get(key, 0) + (value if self.combined else 1)
        else:
            agg = self.aggregator
            acc = self.acc.get(key, _MISSING)
            if self.combined:
                self.acc[key] = agg.merge(agg.init() if acc is _MISSING else acc, value)
            else:
                self.acc[key] = agg.apply(agg.init() if acc is _MISSING else acc, value)
        if self._leaf is not None:
            self._changed[key] = None
            self._unacked.append(tuple)
            return
        waiting = self.pending.get(key)
        if waiting is None:
            self.pending[key] = [tuple]
        else:
            waiting.append(tuple)

    def flush(self) -> None:
        """Forward each changed key's result, anchored to its tuples, then ack them (a leaf: :meth:`_flush_leaf`)."""
        if self._leaf is not None:
            self._flush_leaf(self._leaf)
            return
        pending, self.pending = self.pending, {}
        forward = self._entries[0]
        result = self.aggregator.result
        for key, tuples in pending.items():
            self.out.anchors = tuples
            try:
                forward((key, result(self.acc[key])) if self.keyed else result(self.acc[key]))
            except Exception as exc:
                for t in tuples:
                    self.collector.fail(t, f"forwarding key {key!r} raised {type(exc).__name__}: {exc}")
                continue
            for t in tuples:
                self.collector.ack(t)
        self.out.anchors = None

    def _flush_leaf(self, ports: list[Port]) -> None:
        """A leaf's tick: emit each changed key's result on every port, unanchored; then ack the tick's tuples in arrival order.

        The tuples of a key whose result raised (a result the output cannot encode) are
        failed with the reason, and the others acked.
        """
        changed, self._changed = self._changed, {}
        unacked, self._unacked = self._unacked, []
        emit, acc, result, keyed = self.collector.emit, self.acc, self.aggregator.result, self.keyed
        failed: dict[Any, str] = {}
        for key in changed:
            try:
                value = (key, result(acc[key])) if keyed else result(acc[key])
                for port in ports:
                    emit([value[0], value[1]] if port.pair else [value], None, port.stream)
            except Exception as exc:
                failed[key] = f"forwarding key {key!r} raised {type(exc).__name__}: {exc}"
        ack = self.collector.ack
        if not failed:
            for t in unacked:
                ack(t)
            return
        for t in unacked:
            v = self._read(t) if self._read is not None else self.reader(t).read(t)
            why = failed.get(v[0] if keyed else None)
            if why is None:
                ack(t)
            else:
                self.collector.fail(t, why)

    @override
    def cleanup(self) -> None:
        self.flush()


def _leaf_ports(chain: Chain, context: TopologyContext) -> list[Port] | None:
    """The ports of a chain that only emits its entry's values to outputs no bolt subscribes to; None otherwise (:class:`AggregateBolt`)."""
    if len(chain.roots) != 1 or not chain.roots[0]:
        return None
    ports = [t for t in chain.roots[0] if isinstance(t, Port)]
    if len(ports) != len(chain.roots[0]) or any(p.fields for p in ports):
        return None
    if any(context.topology.subscribers(context.this_component_id, p.stream) for p in ports):
        return None
    return ports


_MISSING = object()


class WindowBolt(WindowedBolt, _ChainOwner):
    """Each window, by key: an aggregate, a join of two sides, or a cogroup (Storm's ``WindowedProcessorBolt`` and its join processors).

    Args:
      window: the :class:`~streams.api.windows.Window`.
      mode: ``aggregate`` (``keyed`` or global), ``join`` (``how``: inner, left, right, full)
        or ``cogroup``.
      aggregator: for ``aggregate``.
      chain, readers: what follows, and the inputs (a join's have ``side`` 0 and 1).

    A join emits ``(key, (left, right))`` for each pair of values with the key in the
    window (None for a missing side of an outer join); a cogroup ``(key, (lefts, rights))``.

    What follows a window into a running aggregate is combined per window, as Storm combines a
    windowed stream before ``partitionBy(KEY)``: once the window's results have run through
    the chain, one partial per key is emitted, anchored to the tuples of every result folded
    into it (:class:`CombiningBolt` does the same per tick).
    """

    def __init__(
        self,
        window: Window,
        mode: str,
        chain: Chain,
        readers: list[Reader],
        *,
        keyed: bool = True,
        aggregator: CombinerAggregator | None = None,
        how: str = "inner",
    ) -> None:
        super().__init__()
        self._init_chain(chain, readers)
        self.window = window
        self.mode = mode
        self.keyed = keyed
        self.aggregator = aggregator
        self.how = how
        self.out = _Anchored()
        self._combines: list[Partials] = []

    @property
    @override
    def window_spec(self) -> WindowSpec:
        return self.window.spec(self._value_of)

    def _value_of(self, t: Tuple) -> Any:
        v = self.reader(t).read(t)
        return v[1] if self.keyed else v

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        _declare_ports(self.chain, declarer)

    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: Any) -> None:
        self.collector = collector
        self.out.collector = collector  # a window's collector anchors to the window's tuples
        self._combines = [Partials(p) for p in self.chain.ports if p.combine is not None]
        self._entries = self.chain.link_entries(self.out.emit, {c.stream: c.staged.append for c in self._combines})

    @override
    def execute(self, window: TupleWindow) -> None:
        forward = self._entries[0]
        results = self.aggregate(window.get()) if self.mode == "aggregate" else self.join(window.get())
        out = self.out
        combines = self._combines
        try:
            for value, anchors in results:
                out.anchors = anchors
                forward(value)
                for c in combines:
                    if c.staged:
                        c.fold_all(anchors)
        except BaseException:
            for c in combines:  # the window fails (WindowedBoltExecutor): its tuples replay, its partials go
                c.staged.clear()
                c.take()
            raise
        finally:
            out.anchors = None
        send_partials(self.collector, combines)

    def aggregate(self, tuples: list[Tuple]) -> list[tuple[Any, list[Tuple]]]:
        """The window's results, each with the tuples it comes from (its anchors).

        ``(key, result)`` per key in order of first appearance, or ``result`` alone for a global aggregate.
        """
        agg = self.aggregator
        assert agg is not None
        accs: dict[Any, Any] = {}
        sources: dict[Any, list[Tuple]] = {}
        for t in tuples:
            v = self.reader(t).read(t)
            key, value = v if self.keyed else (None, v)
            acc = accs.get(key, _MISSING)
            if acc is _MISSING:
                acc = agg.init()
                sources[key] = [t]
            else:
                sources[key].append(t)
            accs[key] = agg.apply(acc, value)
        if not self.keyed:
            return [(agg.result(a), sources[k]) for k, a in accs.items()]
        return [((k, agg.result(a)), sources[k]) for k, a in accs.items()]

    def join(self, tuples: list[Tuple]) -> list[tuple[Any, list[Tuple]]]:
        """The window's join (or cogroup) results, keys in order of first appearance, each with the tuples it joins (its anchors).

        A joined pair is anchored to its two tuples (one, for an outer join's unmatched side),
        not to the whole window: its tree depends on them alone, and an emit costs one edge per anchor.
        """
        sides: tuple[dict[Any, list[tuple[Any, Tuple]]], dict[Any, list[tuple[Any, Tuple]]]] = ({}, {})
        order: dict[Any, None] = {}
        for t in tuples:
            r = self.reader(t)
            key, value = r.read(t)
            sides[r.side].setdefault(key, []).append((value, t))
            order[key] = None
        left, right = sides
        if self.mode == "cogroup":
            out_groups: list[tuple[Any, list[Tuple]]] = []
            for k in order:
                ls, rs = left.get(k, []), right.get(k, [])
                out_groups.append(((k, ([v for v, _ in ls], [v for v, _ in rs])), [t for _, t in ls] + [t for _, t in rs]))
            return out_groups
        out: list[tuple[Any, list[Tuple]]] = []
        how = self.how
        nothing: list[tuple[Any, Tuple | None]] = [(None, None)]
        for k in order:
            lk, rk = left.get(k), right.get(k)
            if lk is None and how in ("inner", "left"):
                continue
            if rk is None and how in ("inner", "right"):
                continue
            for a, ta in lk or nothing:
                for b, tb in rk or nothing:
                    out.append(((k, (a, b)), [x for x in (ta, tb) if x is not None]))
        return out


class StateBolt(StatefulBolt, _ChainOwner):
    """``update_state_by_key`` and ``state_query`` on a checkpointed :class:`~streams.KeyValueState`.

    Storm's ``UpdateStateByKeyProcessor`` and ``StateQueryProcessor``.

    An update ``(key, value)`` sets ``state[key] = update(state.get(key, initial), value)``
    and forwards ``(key, new)`` on entry 0 (a replayed update, already in the state, forwards
    the key's state again). A query ``key`` forwards ``(key, state.get(key))``;
    a pair ``(key, value)`` queries its key and forwards ``(key, (value, state.get(key)))``, a
    stream joined with a table (each query on the chain entry of its reader). All are anchored
    to their input. The runtime acks an update at the next checkpoint (a stateful bolt's rule), so the state holds each update
    exactly once; a query only reads, and is acked at once.
    """

    def __init__(self, initial: Any, update: Callable[[Any, Any], Any], chain: Chain, readers: list[Reader]) -> None:
        self._init_chain(chain, readers)
        self.initial = initial
        self.update = update
        self.out = _Anchored()
        self.state: KeyValueState | None = None

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        _declare_ports(self.chain, declarer)

    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        super().prepare(conf, context, collector)
        self.out.collector = collector
        self._entries = self.chain.link_entries(self.out.emit)

    @override
    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    @override
    def reads_only(self, tuple: Tuple) -> bool:
        return self.reader(tuple).side != UPDATE  # a query: acked at once, executed again on a replay

    @override
    def replayed(self, tuple: Tuple) -> None:
        state = self.state
        assert state is not None
        key, _ = self.reader(tuple).read(tuple)
        self.out.anchors = tuple
        self._entries[0]((key, state.get(key)))  # the update is in the state: forward the key's state again

    @override
    def execute(self, tuple: Tuple) -> None:
        state = self.state
        assert state is not None
        r = self.reader(tuple)
        self.out.anchors = tuple
        side = r.side
        if side == UPDATE:
            key, value = r.read(tuple)
            current = state.get(key, _MISSING)
            new = self.update(copy.deepcopy(self.initial) if current is _MISSING else current, value)
            state[key] = new
            self._entries[0]((key, new))
        elif side == QUERY:
            key = hashable(r.read(tuple))
            self._entries[r.entry]((key, state.get(key)))
        else:
            key, value = r.read(tuple)
            self._entries[r.entry]((key, (value, state.get(key))))
        self.collector.ack(tuple)
