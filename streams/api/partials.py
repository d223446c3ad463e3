"""Partial aggregates per key, the map-side combine of the Stream API (Storm's ``PairStream.combineByKey``), and keys as dict keys.

A bolt whose chain feeds a running aggregate (compile rule 4) keeps one :class:`Partials`
per such port: what reaches the port is *staged* while an input runs through the chain,
then *folded* into a partial accumulator per key (``aggregator.apply`` from ``init()``),
each key remembering the input tuples folded into it. :func:`send_partials` emits them,
each anchored to its tuples; the aggregate merges them (``aggregator.merge``).

>>> from streams.api.aggregators import Counter
>>> from streams.api.chain import Port
>>> p = Partials(Port("s1", pair=True, combine=Counter()))
>>> line = object()
>>> p.staged.extend([("the", 1), ("cat", 1), ("the", 1)])
>>> p.fold(line)  # a bolt folds for its input Tuple; any object stands for one here
>>> sorted(p.acc.items()), len(p.anchors["the"])
([('cat', 1), ('the', 2)], 1)
"""

from __future__ import annotations

from typing import Any

from streams.api.aggregators import CombinerAggregator, Counter
from streams.api.chain import Port
from streams.model.collector import OutputCollector
from streams.model.tuple import Tuple

_MISSING = object()


def hashable(key: Any) -> Any:
    """A key as a dict key: a list (a tuple that crossed the wire as JSON) becomes a tuple."""
    return tuple(hashable(k) for k in key) if type(key) is list else key


class Partials:
    """One combining port's partial accumulator per key, and the input tuples folded into each."""

    def __init__(self, port: Port) -> None:
        assert port.combine is not None
        self.stream = port.stream
        self.pair = port.pair
        self.aggregator: CombinerAggregator = port.combine
        self.counting = isinstance(port.combine, Counter)
        self.acc: dict[Any, Any] = {}
        self.anchors: dict[Any, list[Tuple]] = {}
        """Per key, the tuples folded into its partial, each once, in arrival order (:meth:`fold`)."""
        self.anchor_sets: dict[Any, dict[int, Tuple]] = {}
        """Per key, a window bolt's anchors (:meth:`fold_all`): a tuple may be in several of a window's results."""
        self.staged: list[Any] = []
        """What reached the port while the current input ran through the chain (folded once it ran without raising)."""

    def _apply(self, p: Any) -> Any:
        """Fold one staged value (a pair, for a pair port) into its key's partial; returns the key."""
        if self.pair:
            k, value = p
            if type(k) is list:
                k = hashable(k)
        else:
            k, value = None, p
        agg = self.aggregator
        a = self.acc.get(k, _MISSING)
        self.acc[k] = agg.apply(agg.init() if a is _MISSING else a, value)
        return k

    def fold(self, t: Tuple) -> None:
        """Fold the staged values into the partials, each key anchored to ``t`` once; empty the stage."""
        acc, anchors, staged = self.acc, self.anchors, self.staged
        if self.counting and self.pair:  # count_by_key: the hot path of a word count
            for p in staged:
                k = p[0]
                if type(k) is list:
                    k = hashable(k)
                n = acc.get(k)
                if n is None:
                    acc[k] = 1
                    anchors[k] = [t]
                else:
                    acc[k] = n + 1
                    held = anchors[k]
                    if held[-1] is not t:
                        held.append(t)
        else:
            for p in staged:
                k = self._apply(p)
                kept = anchors.get(k)
                if kept is None:
                    anchors[k] = [t]
                elif kept[-1] is not t:
                    kept.append(t)
        staged.clear()

    def fold_all(self, ts: list[Tuple]) -> None:
        """Fold the staged values into the partials, each key anchored to the tuples ``ts`` (a window's result's); empty the stage."""
        sets = self.anchor_sets
        for p in self.staged:
            by_id = sets.setdefault(self._apply(p), {})
            for t in ts:
                by_id[id(t)] = t
        self.staged.clear()

    def take(self) -> list[tuple[list[Any], list[Tuple]]]:
        """The partials, as ``(values, anchors)`` to emit (``[key, partial]``, or ``[partial]`` for a global aggregate); the port starts anew."""
        acc, anchors, sets = self.acc, self.anchors, self.anchor_sets
        self.acc, self.anchors, self.anchor_sets = {}, {}, {}
        pair = self.pair
        return [([k, a] if pair else [a], anchors[k] if k in anchors else list(sets[k].values())) for k, a in acc.items()]


def send_partials(collector: OutputCollector, ports: list[Partials]) -> None:
    """Emit every port's partials, each anchored to its tuples; a partial that cannot be emitted fails them."""
    for c in ports:
        if not c.acc:
            continue
        emit, stream = collector.emit, c.stream
        for values, anchors in c.take():
            try:
                emit(values, anchors, stream)
            except Exception as exc:
                for t in anchors:
                    collector.fail(t, f"combining key {values[0]!r} raised {type(exc).__name__}: {exc}")
