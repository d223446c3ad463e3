"""Storm 2.x's Stream API in Python: :class:`StreamBuilder`, :class:`Stream`, :class:`PairStream` (``org.apache.storm.streams``).

Operations build a graph; :meth:`StreamBuilder.build` compiles it to an ordinary
:class:`~streams.Topology` of spouts and bolts (:mod:`streams.api.compiler`), which ``squall
run``, ``squall submit`` and :mod:`streams.testing` take as they take a hand-written one.
Values cross between bolts as JSON (a tuple arrives as a list; a list key is read back as a
tuple).

The word count (``examples/wordcount_stream.py``)::

    >>> import re
    >>> from streams import RecordTranslator
    >>> from streams.kafka.spout import KafkaSpout
    >>> from streams.testing import run_topology
    >>> b = StreamBuilder()
    >>> lines = b.new_stream(KafkaSpout(translator=RecordTranslator("line")), name="lines")
    >>> counts = lines.flat_map(lambda l: re.findall(r"[a-z']+", l.lower())).map_to_pair(lambda w: (w, 1)).count_by_key()
    >>> counts.set_output("squall.{topology}.counts")
    >>> result = run_topology(b.build("wc"), {"lines": ["the cat", "The dog"]})
    >>> sorted(result.output().items())
    [('cat', 1), ('dog', 1), ('the', 2)]

A by-key operation needs a pair stream, and says so when the stream has none::

    >>> lines.count_by_key()
    Traceback (most recent call last):
    ...
    streams.exceptions.TopologyError: [count_by_key] needs a PairStream of (key, value): call map_to_pair or key_by first
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from streams.api.aggregators import CombinerAggregator, Counter, FunctionAggregator, Reducer
from streams.api.graph import KEEPS_WINDOW, Node
from streams.api.windows import Window
from streams.exceptions import TopologyError
from streams.model.spec import Topology
from streams.model.spout import Spout

if TYPE_CHECKING:
    from streams.model.bolt import BasicBolt, Bolt
    from streams.model.tuple import Tuple

PAIR_ONLY = frozenset(
    {
        "map_values",
        "flat_map_values",
        "reduce_by_key",
        "aggregate_by_key",
        "group_by_key",
        "count_by_key",
        "join",
        "left_outer_join",
        "right_outer_join",
        "full_outer_join",
        "cogroup_by_key",
        "update_state_by_key",
    }
)
"""The operations of a :class:`PairStream` only."""


class StreamBuilder:
    """Builds a stream graph and compiles it into a :class:`~streams.Topology` (Storm's ``StreamBuilder``).

    >>> from streams.testing import run_topology
    >>> from streams import RecordTranslator
    >>> from streams.kafka.spout import KafkaSpout
    >>> b = StreamBuilder()
    >>> s = b.new_stream(KafkaSpout(translator=RecordTranslator("n")), name="numbers").map(int).filter(lambda n: n % 2 == 0)
    >>> s.key_by(lambda n: "even").reduce_by_key(lambda a, c: a + c).set_output("squall.{topology}.sum")
    >>> run_topology(b.build("evens"), {"numbers": ["1", "2", "4"]}).output()
    {'even': 6}
    """

    def __init__(self, *, combine: bool = True) -> None:
        self.nodes: list[Node] = []
        self.outputs: list[Node] = []
        self.combine = combine
        """Processor bolts combine what they send to running aggregates, per key and tick (:class:`~streams.api.bolts.CombiningBolt`);
        False: one tuple per value, and no tick of latency before the aggregate."""

    def _add(self, node: Node) -> Node:
        self.nodes.append(node)
        return node

    def new_stream(self, spout: Spout, parallelism: int = 1, *, name: str | None = None, value_mapper: Callable[[Tuple], Any] | None = None) -> Stream:
        """A stream of ``spout``'s tuples (``parallelism`` executors; ``name`` is its component id, default ``spout1``, ``spout2``...).

        A value is the tuple's one field (``["line"]`` gives the line), the tuple of its fields
        when it has several, or ``value_mapper(tuple)``. Raises TopologyError for a spout that
        is not a :class:`~streams.Spout` or a parallelism below 1.

        >>> from streams import RecordTranslator
        >>> from streams.kafka.spout import KafkaSpout
        >>> from streams.testing import run_topology
        >>> b = StreamBuilder()
        >>> lines = b.new_stream(KafkaSpout(translator=RecordTranslator("line")), 2, name="lines")
        >>> lines.map(str.upper).set_output("squall.{topology}.out")
        >>> [(c.id, c.parallelism) for c in b.build("up").components.values()]
        [('lines', 2), ('map1', 2)]
        """
        if not isinstance(spout, Spout):
            raise TopologyError(f"[new_stream] needs a Spout, got {type(spout).__name__}")
        if parallelism < 1:
            raise TopologyError(f"[new_stream] parallelism must be >= 1, got {parallelism}")
        n = sum(1 for x in self.nodes if x.kind == "spout") + 1
        args = {"spout": spout, "id": name or f"spout{n}", "value_mapper": value_mapper}
        return Stream(self, self._add(Node("spout", "new_stream", [], False, parallelism, args=args)))

    def build(self, name: str, conf: dict[str, Any] | None = None) -> Topology:
        """The topology (``name``, topology config ``conf``), checked as ``squall submit`` checks it.

        Raises TopologyError naming the operation (and field) at fault: a window longer than
        ``topology.message.timeout.secs``, an operation after ``for_each``, a stream nobody reads...

        >>> from streams import RecordTranslator
        >>> from streams.kafka.spout import KafkaSpout
        >>> from streams.testing import run_topology
        >>> b = StreamBuilder()
        >>> b.new_stream(KafkaSpout(translator=RecordTranslator("line")), name="lines").map(str.upper).set_output("squall.{topology}.out")
        >>> topo = b.build("up", {"topology.workers": 2})
        >>> topo.name, topo.conf["topology.workers"], run_topology(topo, {"lines": ["hi"]}).output()
        ('up', 2, {'HI': 'HI'})
        """
        from streams.api.compiler import compile_graph
        from streams.model.checks import check_confs

        topology = compile_graph(self, name, dict(conf or {}))
        check_confs(topology)
        return topology


class Stream:
    """A stream of values (Storm's ``Stream<T>``). Every operation returns a new stream; the graph is compiled by :meth:`StreamBuilder.build`."""

    pair = False

    def __init__(self, builder: StreamBuilder, node: Node) -> None:
        self.builder = builder
        self.node = node

    def __getattr__(self, name: str) -> Any:
        if name in PAIR_ONLY:
            raise TopologyError(f"[{name}] needs a PairStream of (key, value): call map_to_pair or key_by first")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- plumbing -------------------------------------------------------------------------------
    def _then(self, kind: str, name: str | None = None, *, pair: bool | None = None, parents: list[Node] | None = None, **args: Any) -> Node:
        if self.node.kind == "for_each":
            raise TopologyError(f"[{name or kind}] follows for_each, which ends a stream")
        pair = self.pair if pair is None else pair
        window = self.node.window if kind in KEEPS_WINDOW else None  # a value-level step keeps the window for the aggregation after it
        node = Node(kind, name or kind, parents or [self.node], pair, self.node.parallelism, window=window, args=args)
        return self.builder._add(node)

    def _wrap(self, node: Node) -> Any:
        return PairStream(self.builder, node) if node.pair else Stream(self.builder, node)

    # -- stateless, fused ------------------------------------------------------------------------
    def filter(self, predicate: Callable[[Any], bool]) -> Any:
        """The values for which ``predicate(value)`` holds (fused).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.filter(lambda n: n > 1), [1, 2, 3])
        [2, 3]
        """
        return self._wrap(self._then("filter", fn=predicate))

    def map(self, fn: Callable[[Any], Any]) -> Stream:
        """``fn(value)`` for each value (fused).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.map(lambda n: n * 10), [1, 2])
        [10, 20]
        """
        return Stream(self.builder, self._then("map", pair=False, fn=fn))

    def flat_map(self, fn: Callable[[Any], Iterable[Any]]) -> Stream:
        """Each item of ``fn(value)`` (fused).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.flat_map(str.split), ["a b", "c"])
        ['a', 'b', 'c']
        """
        return Stream(self.builder, self._then("flat_map", pair=False, fn=fn))

    def peek(self, fn: Callable[[Any], Any]) -> Any:
        """Calls ``fn(value)`` and passes the value on (fused; for debugging).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.peek(print), ["x"])
        x
        ['x']
        """
        return self._wrap(self._then("peek", fn=fn))

    def for_each(self, fn: Callable[[Any], Any]) -> None:
        """Calls ``fn(value)`` for each value; ends the stream (fused; Storm's ``forEach``).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.for_each(print), [1, 2])
        1
        2
        []
        """
        self._then("for_each", fn=fn)

    def print(self) -> None:
        """Prints each value to the worker's standard output (``for_each(print)``).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.print(), ["a", "b"])
        a
        b
        []
        """
        self.for_each(print)

    def branch(self, *predicates: Callable[[Any], bool]) -> list[Any]:
        """One stream per predicate; a value goes to the first whose predicate holds, or nowhere (fused; Storm's ``branch``).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.branch(lambda n: n < 2, lambda n: True)[1], [1, 2, 3])
        [2, 3]
        """
        if not predicates:
            raise TopologyError("[branch] needs at least one predicate")
        node = self._then("branch", preds=tuple(predicates))
        arms = []
        for i in range(len(predicates)):
            arm = self.builder._add(Node("arm", "branch", [node], self.pair, node.parallelism, window=node.window, branch=i))
            arms.append(self._wrap(arm))
        return arms

    def map_to_pair(self, fn: Callable[[Any], tuple[Any, Any]]) -> PairStream:
        """A pair stream of ``fn(value) -> (key, value)`` (fused).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.map_to_pair(lambda w: (w, len(w))), ["ab"])
        [('ab', 2)]
        """
        return PairStream(self.builder, self._then("map_to_pair", pair=True, fn=fn))

    def key_by(self, fn: Callable[[Any], Any]) -> PairStream:
        """A pair stream of ``(fn(value), value)`` (fused).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.key_by(len), ["ab"])
        [(2, 'ab')]
        """
        return PairStream(self.builder, self._then("key_by", pair=True, fn=fn))

    # -- regrouping ------------------------------------------------------------------------------
    def repartition(self, parallelism: int) -> Any:
        """The same values, spread evenly over ``parallelism`` executors of a new bolt (Storm's ``repartition``); what follows runs there.

        Before operations that all regroup anyway (``*_by_key``, a window, a join, a state,
        ``to``), after a bolt, it starts no bolt of its own: it sets their parallelism
        (:mod:`streams.api.compiler`). Raises TopologyError for a ``parallelism`` below 1.

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.repartition(2).map(str), [1])
        ['1']
        """
        if parallelism < 1:
            raise TopologyError(f"[repartition] parallelism must be >= 1, got {parallelism}")
        node = self._then("repartition")
        node.parallelism = parallelism
        return self._wrap(node)

    def window(self, window: Window) -> Any:
        """The same stream, windowed: the next aggregation or join runs per window (Storm's ``window``).

        ``window`` is ``TumblingWindows.of(size)`` or ``SlidingWindows.of(length, interval)``,
        sizes in tuples (``Count``) or seconds (``Duration``).

        >>> from streams.api import TumblingWindows, Count
        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.window(TumblingWindows.of(Count(2))).reduce(lambda a, b: a + b), [1, 2, 3, 4])
        [3, 7]
        """
        if not isinstance(window, Window):
            raise TopologyError(f"[window] needs TumblingWindows.of(...) or SlidingWindows.of(...), got {type(window).__name__}")
        node = self._then("pass", "window")
        node.window = window
        return self._wrap(node)

    def aggregate(self, aggregator: CombinerAggregator) -> Stream:
        """One result over all values (Storm's ``aggregate``): per window if windowed, else a running result, forwarded as it changes. Runs on one task.

        >>> from streams.api import Mean
        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.aggregate(Mean()), [1, 2, 6])
        [3.0]
        """
        _check_aggregator("aggregate", aggregator)
        return Stream(self.builder, self._aggregate("aggregate", aggregator, keyed=False))

    def reduce(self, fn: Callable[[Any, Any], Any]) -> Stream:
        """``fn(a, b)`` folded over all values (Storm's ``reduce``), per window if windowed. Runs on one task.

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.reduce(max), [3, 9, 4])
        [9]
        """
        return Stream(self.builder, self._aggregate("reduce", Reducer(fn), keyed=False))

    def _aggregate(self, name: str, aggregator: CombinerAggregator, keyed: bool) -> Node:
        node = self._then("window" if self.node.window else "aggregate", name, pair=keyed, aggregator=aggregator, keyed=keyed, window=self.node.window)
        if not keyed:
            node.parallelism = 1
        return node

    def state_query(self, state: StreamState) -> PairStream:
        """``(value, state[value])`` for each value, read from a stream state (Storm's ``stateQuery``); ``None`` for a key never updated.

        On a :class:`PairStream`, each pair's key is looked up and ``(key, (value,
        state[key]))`` comes out: a stream joined with a table (a left join: ``None`` for a key
        the table lacks), the table being what ``update_state_by_key`` keeps. A query sees the
        updates that reached the state before it (same key, same task, in order).

        >>> from streams.testing import LocalTopology
        >>> from streams import RecordTranslator
        >>> from streams.kafka.spout import KafkaSpout
        >>> b = StreamBuilder()
        >>> words = b.new_stream(KafkaSpout(translator=RecordTranslator("w")), name="words")
        >>> totals = words.map_to_pair(lambda w: (w, 1)).update_state_by_key(0, lambda s, v: s + v)
        >>> asks = b.new_stream(KafkaSpout(translator=RecordTranslator("q")), name="asks")
        >>> asks.state_query(totals).set_output("squall.{topology}.answers", merge="last")
        >>> with LocalTopology(b.build("q")) as local:
        ...     local.feed("words", ["a", "a"])
        ...     local.settle()
        ...     local.feed("asks", ["a", "b"])
        ...     local.settle()
        >>> local.result().outputs["squall.q.answers"]
        {'a': 2, 'b': None}

        The table join: each value with its key's entry in the table (a dict of carriers here).

        >>> from streams.testing import run_topology
        >>> b = StreamBuilder()
        >>> rows = b.new_stream(KafkaSpout(translator=RecordTranslator("row")), name="rows").map(lambda r: r.split(","))
        >>> table, flights = rows.branch(lambda r: r[0] == "airline", lambda r: r[0] == "flight")
        >>> names = table.map_to_pair(lambda r: (r[1], r[2])).update_state_by_key(None, lambda old, new: new)
        >>> named = flights.map_to_pair(lambda r: (r[1], r[2])).state_query(names)
        >>> named.map_to_pair(lambda p: (p[1][0], p[1][1])).set_output("squall.{topology}.named")
        >>> run_topology(b.build("t"), {"rows": ["airline,UA,United", "flight,UA,1545", "flight,ZZ,7"]}).output()
        {'1545': 'United', '7': None}
        """
        if not isinstance(state, StreamState):
            raise TopologyError(f"[state_query] needs the StreamState of update_state_by_key, got {type(state).__name__}")
        node = self.builder._add(Node("state_query", "state_query", [self.node, state.node], True, state.node.parallelism))
        return PairStream(self.builder, node)

    # -- leaves ----------------------------------------------------------------------------------
    def to(self, bolt: Bolt | BasicBolt, parallelism: int = 1, *, name: str | None = None) -> None:
        """Send the values to ``bolt`` (a :class:`~streams.KafkaBolt`, or any bolt) on a shuffle grouping.

        The bolt gets tuples ``["value"]``, or ``["key", "value"]`` from a pair stream.

        >>> from streams import RecordTranslator
        >>> from streams.kafka.spout import KafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams import BasicBolt
        >>> class Shout(BasicBolt):
        ...     def declare_output_fields(self, declarer): declarer.declare(["value"])
        ...     def execute(self, tuple, collector): print("bolt got", tuple[0])
        >>> b = StreamBuilder()
        >>> b.new_stream(KafkaSpout(translator=RecordTranslator("line")), name="lines").map(str.upper).to(Shout(), name="shout")
        >>> _ = run_topology(b.build("to"), {"lines": ["hi"]})
        bolt got HI
        """
        self._then("to", bolt=bolt, id=name, parallelism=parallelism)

    def set_output(self, topic: str, *, key: Callable[[Any], Any] = str, merge: str = "last") -> None:
        """``squall run --output`` writes the values, keyed by ``key(value)``, to its output file through the external ``topic`` (``{topology}`` is replaced).

        ``merge``: ``last`` keeps the latest value per key, ``sum`` adds them.

        >>> from streams import RecordTranslator
        >>> from streams.kafka.spout import KafkaSpout
        >>> from streams.testing import run_topology
        >>> b = StreamBuilder()
        >>> b.new_stream(KafkaSpout(translator=RecordTranslator("line")), name="lines").set_output("squall.{topology}.out", key=len)
        >>> run_topology(b.build("out"), {"lines": ["ab", "cde", "fg"]}).output()
        {'2': 'fg', '3': 'cde'}
        """
        self.key_by(key).set_output(topic, merge=merge)


def _check_aggregator(name: str, aggregator: Any) -> None:
    if not isinstance(aggregator, CombinerAggregator):
        raise TopologyError(f"[{name}] needs a streams.api.CombinerAggregator (init, apply, merge, result), got {type(aggregator).__name__}")


class PairStream(Stream):
    """A stream of ``(key, value)`` pairs (Storm's ``PairStream<K, V>``): the by-key operations, each on a fields grouping by key."""

    pair = True

    def map_values(self, fn: Callable[[Any], Any]) -> PairStream:
        """``(key, fn(value))`` (fused).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.key_by(len).map_values(str.upper), ["ab"])
        [(2, 'AB')]
        """
        return PairStream(self.builder, self._then("map_values", fn=fn))

    def flat_map_values(self, fn: Callable[[Any], Iterable[Any]]) -> PairStream:
        """``(key, x)`` for each ``x`` of ``fn(value)`` (fused).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.key_by(len).flat_map_values(list), ["ab"])
        [(2, 'a'), (2, 'b')]
        """
        return PairStream(self.builder, self._then("flat_map_values", fn=fn))

    def aggregate_by_key(
        self, aggregator: Any, accumulator: Callable[[Any, Any], Any] | None = None, combiner: Callable[[Any, Any], Any] | None = None
    ) -> PairStream:
        """``(key, result)`` per key: with a :class:`~streams.api.CombinerAggregator`, or ``(initial, accumulator, combiner)`` (Storm's two forms).

        Per window if windowed; else a running result per key, forwarded as it changes
        (coalesced per tick), held in memory by the task that owns the key.

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.key_by(len).aggregate_by_key([], lambda acc, v: acc + [v], lambda a, b: a + b), ["ab", "cd"])
        [(2, ['ab', 'cd'])]
        """
        if accumulator is not None or combiner is not None:
            if accumulator is None or combiner is None:
                raise TopologyError("[aggregate_by_key] needs (initial, accumulator, combiner), or a CombinerAggregator alone")
            aggregator = FunctionAggregator(aggregator, accumulator, combiner)
        _check_aggregator("aggregate_by_key", aggregator)
        return PairStream(self.builder, self._aggregate("aggregate_by_key", aggregator, keyed=True))

    def reduce_by_key(self, fn: Callable[[Any, Any], Any]) -> PairStream:
        """``(key, fn(fn(v1, v2), v3)...)`` per key (Storm's ``reduceByKey``).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.map_to_pair(lambda w: (w[0], 1)).reduce_by_key(lambda a, b: a + b), ["ab", "ac", "b"])
        [('a', 2), ('b', 1)]
        """
        return PairStream(self.builder, self._aggregate("reduce_by_key", Reducer(fn), keyed=True))

    def count_by_key(self) -> PairStream:
        """``(key, count)`` per key (Storm's ``countByKey``).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.key_by(str.lower).count_by_key(), ["a", "A", "b"])
        [('a', 2), ('b', 1)]
        """
        return PairStream(self.builder, self._aggregate("count_by_key", Counter(), keyed=True))

    def group_by_key(self) -> PairStream:
        """``(key, [values])`` per key (Storm's ``groupByKey``); per window if windowed.

        >>> from streams.api import TumblingWindows, Count
        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.key_by(len).window(TumblingWindows.of(Count(3))).group_by_key(), ["a", "bc", "d"])
        [(1, ['a', 'd']), (2, ['bc'])]
        """
        from streams.api.aggregators import Collect

        return PairStream(self.builder, self._aggregate("group_by_key", Collect(), keyed=True))

    def _join(self, name: str, other: PairStream, how: str, mode: str = "join") -> PairStream:
        if not isinstance(other, PairStream):
            raise TopologyError(f"[{name}] needs another PairStream, got {type(other).__name__}")
        if self.node.window is None:
            raise TopologyError(f"[{name}] joins within a window: call window(...) on this stream first")
        node = self._then("join" if mode == "join" else "cogroup", name, parents=[self.node, other.node], how=how, window=self.node.window)
        return PairStream(self.builder, node)

    def join(self, other: PairStream) -> PairStream:
        """``(key, (left, right))`` for each pair of values with the same key in the window (Storm's ``join``; both sides share this stream's window).

        >>> from streams.api import TumblingWindows, Count
        >>> from streams.testing import run_topology
        >>> from streams import RecordTranslator
        >>> from streams.kafka.spout import KafkaSpout
        >>> b = StreamBuilder()
        >>> left = b.new_stream(KafkaSpout(translator=RecordTranslator("l")), name="left").key_by(lambda s: s[0])
        >>> right = b.new_stream(KafkaSpout(translator=RecordTranslator("r")), name="right").key_by(lambda s: s[0])
        >>> left.window(TumblingWindows.of(Count(3))).join(right).set_output("squall.{topology}.out")
        >>> run_topology(b.build("j"), {"left": ["a1", "b1"], "right": ["a2"]}).output()
        {'a': ['a1', 'a2']}
        """
        return self._join("join", other, "inner")

    def left_outer_join(self, other: PairStream) -> PairStream:
        """:meth:`join`, keeping left values without a match as ``(key, (left, None))``.

        >>> from streams import RecordTranslator
        >>> from streams.kafka.spout import KafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.api import Count, TumblingWindows
        >>> b = StreamBuilder()
        >>> left = b.new_stream(KafkaSpout(translator=RecordTranslator("l")), name="left").key_by(lambda s: s[0])
        >>> right = b.new_stream(KafkaSpout(translator=RecordTranslator("r")), name="right").key_by(lambda s: s[0])
        >>> left.window(TumblingWindows.of(Count(4))).left_outer_join(right).set_output("squall.{topology}.out")
        >>> run_topology(b.build("j"), {"left": ["a1", "b1"], "right": ["a2", "c2"]}).output()
        {'a': ['a1', 'a2'], 'b': ['b1', None]}
        """
        return self._join("left_outer_join", other, "left")

    def right_outer_join(self, other: PairStream) -> PairStream:
        """:meth:`join`, keeping right values without a match as ``(key, (None, right))``.

        >>> from streams import RecordTranslator
        >>> from streams.kafka.spout import KafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.api import Count, TumblingWindows
        >>> b = StreamBuilder()
        >>> left = b.new_stream(KafkaSpout(translator=RecordTranslator("l")), name="left").key_by(lambda s: s[0])
        >>> right = b.new_stream(KafkaSpout(translator=RecordTranslator("r")), name="right").key_by(lambda s: s[0])
        >>> left.window(TumblingWindows.of(Count(4))).right_outer_join(right).set_output("squall.{topology}.out")
        >>> run_topology(b.build("j"), {"left": ["a1", "b1"], "right": ["a2", "c2"]}).output()
        {'a': ['a1', 'a2'], 'c': [None, 'c2']}
        """
        return self._join("right_outer_join", other, "right")

    def full_outer_join(self, other: PairStream) -> PairStream:
        """:meth:`join`, keeping unmatched values of both sides.

        >>> from streams import RecordTranslator
        >>> from streams.kafka.spout import KafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.api import Count, TumblingWindows
        >>> b = StreamBuilder()
        >>> left = b.new_stream(KafkaSpout(translator=RecordTranslator("l")), name="left").key_by(lambda s: s[0])
        >>> right = b.new_stream(KafkaSpout(translator=RecordTranslator("r")), name="right").key_by(lambda s: s[0])
        >>> left.window(TumblingWindows.of(Count(4))).full_outer_join(right).set_output("squall.{topology}.out")
        >>> run_topology(b.build("j"), {"left": ["a1", "b1"], "right": ["a2", "c2"]}).output()
        {'a': ['a1', 'a2'], 'b': ['b1', None], 'c': [None, 'c2']}
        """
        return self._join("full_outer_join", other, "full")

    def cogroup_by_key(self, other: PairStream) -> PairStream:
        """``(key, ([left values], [right values]))`` per key in the window (Storm's ``coGroupByKey``).

        >>> from streams import RecordTranslator
        >>> from streams.kafka.spout import KafkaSpout
        >>> from streams.testing import run_topology
        >>> from streams.api import Count, TumblingWindows
        >>> b = StreamBuilder()
        >>> left = b.new_stream(KafkaSpout(translator=RecordTranslator("l")), name="left").key_by(lambda s: s[0])
        >>> right = b.new_stream(KafkaSpout(translator=RecordTranslator("r")), name="right").key_by(lambda s: s[0])
        >>> left.window(TumblingWindows.of(Count(4))).cogroup_by_key(right).set_output("squall.{topology}.out")
        >>> run_topology(b.build("j"), {"left": ["a1", "a3", "b1"], "right": ["a2"]}).output()
        {'a': [['a1', 'a3'], ['a2']], 'b': [['b1'], []]}
        """
        return self._join("cogroup_by_key", other, "full", mode="cogroup")

    def update_state_by_key(self, initial: Any, update: Callable[[Any, Any], Any]) -> StreamState:
        """``state[key] = update(state.get(key, initial), value)`` in a checkpointed key-value state (Storm's ``updateStateByKey``).

        Returns the :class:`StreamState`: query it with :meth:`Stream.state_query`, read its
        updates ``(key, new state)`` with :meth:`StreamState.to_pair_stream`. Each update is in
        the state exactly once, whatever is replayed (a stateful bolt's rule).

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.map_to_pair(lambda w: (w, 1)).update_state_by_key(0, lambda total, n: total + n).to_pair_stream(), ["a", "b", "a"])
        [('a', 1), ('b', 1), ('a', 2)]
        """
        node = self._then("state", "update_state_by_key", initial=initial, update=update)
        return StreamState(self.builder, node)

    def set_output(self, topic: str, *, key: Callable[[Any], Any] | None = None, merge: str = "last") -> None:
        """``squall run --output`` writes ``{key: value}`` through the external ``topic`` (``{topology}`` is replaced); ``merge`` is ``last`` or ``sum``.

        >>> from streams import RecordTranslator
        >>> from streams.kafka.spout import KafkaSpout
        >>> from streams.testing import run_topology
        >>> b = StreamBuilder()
        >>> words = b.new_stream(KafkaSpout(translator=RecordTranslator("line")), name="lines").map_to_pair(lambda w: (w, 1))
        >>> words.set_output("squall.{topology}.out", merge="sum")
        >>> run_topology(b.build("sum"), {"lines": ["a", "b", "a"]}).output()
        {'a': 2, 'b': 1}
        """
        if merge not in ("last", "sum"):
            raise TopologyError(f"[set_output] merge must be 'last' or 'sum', got {merge!r}")
        if key is not None:
            raise TopologyError("[set_output] a PairStream's output is keyed by its keys: drop key=")
        self._then("output", "set_output", topic=topic, merge=merge)


class StreamState:
    """The state of :meth:`PairStream.update_state_by_key` (Storm's ``StreamState<K, V>``)."""

    def __init__(self, builder: StreamBuilder, node: Node) -> None:
        self.builder = builder
        self.node = node

    def to_pair_stream(self) -> PairStream:
        """The updates, ``(key, new state)``, as a pair stream.

        >>> from streams.testing import run_stream
        >>> run_stream(lambda s: s.map_to_pair(lambda w: (w, len(w))).update_state_by_key(0, max).to_pair_stream(), ["ab", "ab", "c"])
        [('ab', 2), ('ab', 2), ('c', 1)]
        """
        return PairStream(self.builder, self.node)
