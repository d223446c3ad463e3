"""Fused operations: a bolt's chain of stateless steps, linked into plain Python calls (Storm's ``ProcessorBolt`` and ``ProcessorNode``).

Consecutive stateless operations of the Stream API (``filter``, ``map``, ``flat_map``,
``peek``, ``for_each``, ``map_to_pair``, ``key_by``, ``map_values``, ``flat_map_values``,
``branch``) run in one bolt: :meth:`Chain.link` turns the steps into nested closures, so a
value goes from one operation to the next by a Python call, never through Kafka. Where the
chain leaves the bolt (a *port*), the value is emitted on the port's stream, as ``[value]``
or, for a pair, ``[key, value]``. A port may instead end in a *sink* (:meth:`Chain.link`'s
``sinks``), a function that takes the value or pair itself: a bolt that combines what it
sends to an aggregate (:class:`~streams.api.bolts.CombiningBolt`) collects it that way.

A chain is pure data (the steps hold the user's functions and the indices of what follows),
so a bolt holding one deep-copies per task cheaply; :meth:`Chain.link` builds the closures
in ``prepare``.

>>> chain = Chain()
>>> up = chain.add(Step("map", lambda s: s.upper()))
>>> words = chain.add(Step("flat_map", str.split))
>>> chain.connect(up, words)
>>> chain.connect(words, Port("words", pair=False))
>>> out = []
>>> run = chain.link(lambda values, stream: out.append((stream, values)))
>>> run[up]("to be")
>>> out
[('words', ['TO']), ('words', ['BE'])]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streams.exceptions import TopologyError

Forward = Callable[[Any], None]
"""Takes one value on to what follows in the chain."""

Emit = Callable[[list[Any], str], object]
"""Emits ``values`` on a stream (the bolt's collector, anchored by the bolt)."""

STATELESS = ("filter", "map", "flat_map", "peek", "for_each", "map_to_pair", "key_by", "map_values", "flat_map_values", "branch")
"""The operations that fuse."""


@dataclass(frozen=True)
class Port:
    """Where a chain leaves its bolt: the output ``stream``; ``pair`` values go out as ``[key, value]``.

    With ``fields`` (Trident), a value is the whole tuple's values, emitted as they are and declared with these field names.
    """

    stream: str
    pair: bool
    fields: tuple[str, ...] = ()
    combine: Any = field(default=None, compare=False)
    """The :class:`~streams.api.aggregators.CombinerAggregator` of the by-key aggregate this port feeds, when its bolt combines
    before sending (:class:`~streams.api.bolts.CombiningBolt`); None: each value is emitted as it comes."""


@dataclass
class Step:
    """One stateless operation: its ``kind`` (one of :data:`STATELESS`), the user's function(s), and what follows.

    ``fns`` holds one function, or for ``branch`` one predicate per branch. ``next`` holds,
    per branch (one list for the others), the indices of the following steps and the ports.
    """

    kind: str
    fn: Callable[..., Any] | None = None
    preds: tuple[Callable[[Any], bool], ...] = ()
    next: list[list[int | Port]] = field(default_factory=lambda: [[]])
    singles: bool = False
    """A Trident ``flat_map`` whose items are one field's values, each going on as ``[item]``."""

    def __post_init__(self) -> None:
        if self.kind not in STATELESS:
            raise TopologyError(f"[{self.kind}] not a stateless operation (one of {', '.join(STATELESS)})")
        if self.kind == "branch":
            self.next = [[] for _ in self.preds]


class Chain:
    """The stateless steps of one bolt, in the order they were added (each step's parents come first)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.roots: list[list[int | Port]] = []
        """What each entry (an input of the bolt, or its stateful head's output) feeds: step indices and ports."""

    def add(self, step: Step) -> int:
        """Append ``step``; returns its index."""
        self.steps.append(step)
        return len(self.steps) - 1

    def entry(self) -> int:
        """A new entry point (an input stream, or a stateful head's output); returns its index."""
        self.roots.append([])
        return len(self.roots) - 1

    def connect(self, src: int, dst: int | Port, branch: int = 0) -> None:
        """``src`` step's output (its ``branch``-th, for ``branch``) goes to step ``dst`` or port ``dst``."""
        self.steps[src].next[branch].append(dst)

    def feed(self, entry: int, dst: int | Port) -> None:
        """Entry ``entry`` goes to step or port ``dst``."""
        self.roots[entry].append(dst)

    def attach(self, where: tuple[str, int, int], dst: int | Port) -> None:
        """What comes out at ``where`` (``("entry", i, 0)`` or ``("step", i, branch)``) goes to step or port ``dst`` too."""
        what, index, branch = where
        if what == "entry":
            self.feed(index, dst)
        else:
            self.connect(index, dst, branch)

    @property
    def ports(self) -> list[Port]:
        """Every port the chain emits on, once each, in order of first use."""
        seen: dict[Port, None] = {}
        for targets in [*self.roots, *(t for s in self.steps for t in s.next)]:
            for t in targets:
                if isinstance(t, Port):
                    seen[t] = None
        return list(seen)

    def link(self, emit: Emit, sinks: dict[str, Forward] | None = None) -> list[Forward]:
        """The steps as closures (index ``i`` runs step ``i`` and everything after it); ``emit`` sends to ports.

        ``sinks``: per port stream, a function that takes what reaches that port (the value, or
        the ``(key, value)`` pair) instead of emitting it.
        """
        sinks = sinks or {}
        linked: list[Forward | None] = [None] * len(self.steps)
        for i in range(len(self.steps) - 1, -1, -1):
            step = self.steps[i]
            outs = [_fan_out([_target(t, linked, emit, sinks) for t in targets]) for targets in step.next]
            sole = step.next[0][0] if len(step.next) == 1 and len(step.next[0]) == 1 else None
            linked[i] = (_link_to_port(step, sole, emit, sinks) if isinstance(sole, Port) else None) or _link_step(step, outs)
        return [f for f in linked if f is not None]

    def link_entries(self, emit: Emit, sinks: dict[str, Forward] | None = None) -> list[Forward]:
        """One closure per entry (:meth:`entry`), running everything it feeds (``sinks``: as :meth:`link`)."""
        linked = self.link(emit, sinks)
        return [_fan_out([_target(t, linked, emit, sinks or {}) for t in targets]) for targets in self.roots]


def _target(t: int | Port, linked: list[Any], emit: Emit, sinks: dict[str, Forward]) -> Forward:
    if isinstance(t, int):
        f = linked[t]
        assert f is not None, "steps are linked after the steps they feed"
        return f  # type: ignore[no-any-return]
    sink = sinks.get(t.stream)
    if sink is not None:
        return sink
    stream = t.stream
    if t.fields:

        def to_tuple_port(v: Any) -> None:
            emit(v if type(v) is list else list(v), stream)  # a step's values are a fresh list: no copy

        return to_tuple_port
    if t.pair:

        def to_pair_port(p: Any) -> None:
            emit([p[0], p[1]], stream)

        return to_pair_port

    def to_port(v: Any) -> None:
        emit([v], stream)

    return to_port


def _link_to_port(step: Step, port: Port, emit: Emit, sinks: dict[str, Forward]) -> Forward | None:
    """A ``map``, ``flat_map`` or ``map_to_pair`` whose only target is a port, emitting itself (one call less per value: a fused bolt's hot path)."""
    fn = step.fn
    stream = port.stream
    sink = sinks.get(stream)
    if sink is not None:
        return _link_to_sink(step, sink)
    if fn is not None and step.kind == "map_to_pair" and port.pair:

        def map_to_pair(v: Any) -> None:
            k, x = fn(v)
            emit([k, x], stream)

        return map_to_pair
    if fn is None or step.kind not in ("map", "flat_map") or port.pair:
        return None
    if step.kind == "flat_map":
        if port.fields and not step.singles:

            def flat_map_tuples(v: Any) -> None:
                for x in fn(v):
                    emit(x if type(x) is list else list(x), stream)

            return flat_map_tuples

        def flat_map_values(v: Any) -> None:
            for x in fn(v):
                emit([x], stream)

        return flat_map_values
    if port.fields:

        def map_tuple(v: Any) -> None:
            x = fn(v)
            emit(x if type(x) is list else list(x), stream)

        return map_tuple

    def map_value(v: Any) -> None:
        emit([fn(v)], stream)

    return map_value


def _link_to_sink(step: Step, sink: Forward) -> Forward | None:
    """A ``map``, ``flat_map`` or ``map_to_pair`` whose only target is a sink, calling it itself."""
    fn = step.fn
    if fn is None or step.kind not in ("map", "flat_map", "map_to_pair") or step.singles:
        return None
    if step.kind == "flat_map":

        def flat_map_to_sink(v: Any) -> None:
            for x in fn(v):
                sink(x)

        return flat_map_to_sink

    def map_to_sink(v: Any) -> None:  # map_to_pair's pair is the sink's pair as it is
        sink(fn(v))

    return map_to_sink


def _drop(_: Any) -> None:
    """The end of a branch that leads nowhere."""


def _fan_out(targets: list[Forward]) -> Forward:
    if not targets:
        return _drop
    if len(targets) == 1:
        return targets[0]

    def fan_out(v: Any) -> None:
        for t in targets:
            t(v)

    return fan_out


def _link_step(step: Step, outs: list[Forward]) -> Forward:
    fn: Callable[..., Any] = step.fn if step.fn is not None else _drop
    nxt = outs[0]
    kind = step.kind
    if kind == "filter":

        def filter_(v: Any) -> None:
            if fn(v):
                nxt(v)

        return filter_
    if kind == "map":

        def map_(v: Any) -> None:
            nxt(fn(v))

        return map_
    if kind == "flat_map" and step.singles:

        def flat_map_singles(v: Any) -> None:
            for x in fn(v):
                nxt([x])

        return flat_map_singles
    if kind == "flat_map":

        def flat_map(v: Any) -> None:
            for x in fn(v):
                nxt(x)

        return flat_map
    if kind == "peek":

        def peek(v: Any) -> None:
            fn(v)
            nxt(v)

        return peek
    if kind == "for_each":

        def for_each(v: Any) -> None:
            fn(v)

        return for_each
    if kind == "map_to_pair":

        def map_to_pair(v: Any) -> None:
            k, x = fn(v)
            nxt((k, x))

        return map_to_pair
    if kind == "key_by":

        def key_by(v: Any) -> None:
            nxt((fn(v), v))

        return key_by
    if kind == "map_values":

        def map_values(p: Any) -> None:
            nxt((p[0], fn(p[1])))

        return map_values
    if kind == "flat_map_values":

        def flat_map_values(p: Any) -> None:
            k = p[0]
            for x in fn(p[1]):
                nxt((k, x))

        return flat_map_values
    assert kind == "branch"
    branches = list(zip(step.preds, outs, strict=True))

    def branch(v: Any) -> None:
        for pred, out in branches:  # Storm's branch: the first predicate that holds
            if pred(v):
                out(v)
                return

    return branch
