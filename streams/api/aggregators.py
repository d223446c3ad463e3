"""Aggregations of the Stream API (Storm's ``org.apache.storm.streams.operations.CombinerAggregator`` and ``Reducer``).

A :class:`CombinerAggregator` folds values into an accumulator (``init``, ``apply``),
merges two accumulators (``merge``) and reads the result off one (``result``). ``reduce``
and ``reduce_by_key`` take a plain two-argument function instead (:class:`Reducer`), and
``aggregate_by_key(initial, accumulator, combiner)`` the three parts as functions
(:class:`FunctionAggregator`).

>>> agg = Mean()
>>> acc = agg.init()
>>> for v in (2, 4, 9):
...     acc = agg.apply(acc, v)
>>> agg.result(acc)
5.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from typing_extensions import override


class CombinerAggregator:
    """Storm's ``CombinerAggregator<T, A, R>``: ``init() -> A``, ``apply(A, T) -> A``, ``merge(A, A) -> A``, ``result(A) -> R``.

    Accumulators cross between bolts as JSON (a tuple arrives as a list): keep them to
    numbers, strings, lists and dicts.
    """

    def init(self) -> Any:
        """A fresh accumulator."""
        raise NotImplementedError

    def apply(self, aggregate: Any, value: Any) -> Any:
        """``aggregate`` with ``value`` folded in."""
        raise NotImplementedError

    def merge(self, a: Any, b: Any) -> Any:
        """Two accumulators as one."""
        raise NotImplementedError

    def result(self, aggregate: Any) -> Any:
        """What is emitted for ``aggregate`` (the default: the accumulator itself)."""
        return aggregate


class Counter(CombinerAggregator):
    """Counts values (Storm's ``aggregators.Count``): ``count_by_key`` is ``aggregate_by_key(Counter())``."""

    @override
    def init(self) -> int:
        return 0

    @override
    def apply(self, aggregate: int, value: Any) -> int:
        return aggregate + 1

    @override
    def merge(self, a: int, b: int) -> int:
        return a + b


class Summer(CombinerAggregator):
    """Sums numeric values (Storm's ``aggregators.Sum``)."""

    @override
    def init(self) -> Any:
        return 0

    @override
    def apply(self, aggregate: Any, value: Any) -> Any:
        return aggregate + value

    @override
    def merge(self, a: Any, b: Any) -> Any:
        return a + b


class Mean(CombinerAggregator):
    """The mean of numeric values: the accumulator is ``[sum, count]``."""

    @override
    def init(self) -> list[float]:
        return [0.0, 0]

    @override
    def apply(self, aggregate: list[float], value: float) -> list[float]:
        return [aggregate[0] + value, aggregate[1] + 1]

    @override
    def merge(self, a: list[float], b: list[float]) -> list[float]:
        return [a[0] + b[0], a[1] + b[1]]

    @override
    def result(self, aggregate: list[float]) -> float:
        return aggregate[0] / aggregate[1] if aggregate[1] else 0.0


class Collect(CombinerAggregator):
    """Collects values into a list (``group_by_key`` and each side of ``cogroup_by_key``)."""

    @override
    def init(self) -> list[Any]:
        return []

    @override
    def apply(self, aggregate: list[Any], value: Any) -> list[Any]:
        aggregate.append(value)
        return aggregate

    @override
    def merge(self, a: list[Any], b: list[Any]) -> list[Any]:
        return a + b


_UNSET = object()


class Reducer(CombinerAggregator):
    """A two-argument function as an aggregator (Storm's ``Reducer<T>``): the first value starts the accumulator."""

    def __init__(self, fn: Callable[[Any, Any], Any]) -> None:
        self.fn = fn

    @override
    def init(self) -> Any:
        return _UNSET

    @override
    def apply(self, aggregate: Any, value: Any) -> Any:
        return value if aggregate is _UNSET else self.fn(aggregate, value)

    @override
    def merge(self, a: Any, b: Any) -> Any:
        if a is _UNSET:
            return b
        return a if b is _UNSET else self.fn(a, b)


class FunctionAggregator(CombinerAggregator):
    """``aggregate_by_key(initial, accumulator, combiner)``: Storm's ``aggregateByKey(R, BiFunction, BiFunction)``.

    ``initial`` is copied for each new key (so a list or dict may be the initial value).
    """

    def __init__(self, initial: Any, accumulator: Callable[[Any, Any], Any], combiner: Callable[[Any, Any], Any]) -> None:
        self.initial = initial
        self.accumulator = accumulator
        self.combiner = combiner

    @override
    def init(self) -> Any:
        import copy

        return copy.deepcopy(self.initial)

    @override
    def apply(self, aggregate: Any, value: Any) -> Any:
        return self.accumulator(aggregate, value)

    @override
    def merge(self, a: Any, b: Any) -> Any:
        return self.combiner(a, b)
