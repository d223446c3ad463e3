"""Trident's operations: functions, filters, aggregators, state queries and state factories (``org.apache.storm.trident.operation``, ``trident.state``).

A Trident tuple is a :class:`TridentTuple`: its values, readable by position or by field
name. :class:`Count` and :class:`Sum` are the built-in aggregators; write your own as a
:class:`CombinerAggregator` (``init``/``combine``/``zero``: can be combined per batch before
the state, the only kind ``persistent_aggregate`` takes), a :class:`ReducerAggregator`
(``init``/``reduce``) or an :class:`Aggregator` (``init``/``aggregate``/``complete``, emitting
any number of tuples).

>>> t = TridentTuple(["the", 3], ("word", "count"))
>>> t[0], t.get("count")
('the', 3)
>>> Sum().init(TridentTuple([4], ("n",))), Count().combine(2, 3), Count().zero()
(4, 5, 0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from typing_extensions import override

from streams.exceptions import TopologyError


class TridentTuple:
    """One tuple's values with their field names (Storm's ``TridentTuple``)."""

    __slots__ = ("fields", "values")

    def __init__(self, values: Sequence[Any], fields: Sequence[str]) -> None:
        self.values = values
        self.fields = fields

    def __getitem__(self, i: int) -> Any:
        return self.values[i]

    def __len__(self) -> int:
        return len(self.values)

    def get(self, field: str) -> Any:
        """The value of ``field``. Raises KeyError naming the field and the fields there are."""
        try:
            return self.values[list(self.fields).index(field)]
        except ValueError:
            raise KeyError(f"field {field!r} not in {list(self.fields)}") from None

    def __repr__(self) -> str:
        return f"TridentTuple({dict(zip(self.fields, self.values, strict=False))!r})"


class TridentCollector:
    """What a :class:`Function` or :class:`Aggregator` emits through (Storm's ``TridentCollector``): ``emit(values)`` appends one output."""

    def __init__(self) -> None:
        self.out: list[list[Any]] = []

    def emit(self, values: Sequence[Any]) -> None:
        """One output tuple's values (the operation's output fields, in order)."""
        self.out.append(list(values))


class Function:
    """Storm's ``BaseFunction``: ``execute(tuple, collector)`` emits zero or more tuples of the output fields, appended to the input tuple."""

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:  # noqa: A002 - Storm's name
        """Emit the output fields' values for ``tuple`` (the input fields), any number of times."""
        raise NotImplementedError


class Filter:
    """Storm's ``BaseFilter``: ``is_keep(tuple)``."""

    def is_keep(self, tuple: TridentTuple) -> bool:  # noqa: A002 - Storm's name
        """True to keep ``tuple``."""
        raise NotImplementedError


class CombinerAggregator:
    """Storm's ``CombinerAggregator<T>``: ``init(tuple)`` per tuple, ``combine(a, b)``, ``zero()`` for no tuple."""

    def init(self, tuple: TridentTuple) -> Any:  # noqa: A002
        """The value of one tuple."""
        raise NotImplementedError

    def combine(self, a: Any, b: Any) -> Any:
        """Two values as one (associative: it runs per batch, then against the state)."""
        raise NotImplementedError

    def zero(self) -> Any:
        """The value of no tuple."""
        raise NotImplementedError


class ReducerAggregator:
    """Storm's ``ReducerAggregator<T>``: ``init()``, then ``reduce(current, tuple)`` per tuple."""

    def init(self) -> Any:
        """The value before any tuple."""
        raise NotImplementedError

    def reduce(self, current: Any, tuple: TridentTuple) -> Any:  # noqa: A002
        """``current`` with ``tuple`` folded in."""
        raise NotImplementedError


class Aggregator:
    """Storm's ``Aggregator<T>``: ``init(batch_id, collector)``, ``aggregate(state, tuple, collector)``, ``complete(state, collector)``.

    It emits what it wants, when it wants.
    """

    def init(self, batch_id: int, collector: TridentCollector) -> Any:
        """A fresh state for batch ``batch_id`` (its txid) and one group."""
        raise NotImplementedError

    def aggregate(self, state: Any, tuple: TridentTuple, collector: TridentCollector) -> None:  # noqa: A002
        """Fold ``tuple`` into ``state`` (mutate it); may emit."""
        raise NotImplementedError

    def complete(self, state: Any, collector: TridentCollector) -> None:
        """The batch is over: emit the results."""
        raise NotImplementedError


class Count(CombinerAggregator):
    """Counts tuples (Storm's ``Count``)."""

    @override
    def init(self, tuple: TridentTuple) -> int:
        return 1

    @override
    def combine(self, a: int, b: int) -> int:
        return a + b

    @override
    def zero(self) -> int:
        return 0


class Sum(CombinerAggregator):
    """Sums the first input field (Storm's ``Sum``): select it with ``input_fields``."""

    @override
    def init(self, tuple: TridentTuple) -> Any:
        return tuple[0]

    @override
    def combine(self, a: Any, b: Any) -> Any:
        return a + b

    @override
    def zero(self) -> int:
        return 0


class QueryFunction:
    """Storm's ``QueryFunction``: ``query(state, keys)`` gives one result per key; ``execute(tuple, result, collector)`` emits the output fields."""

    def query(self, state: Any, keys: list[Any]) -> list[Any]:
        """One result per key, read from ``state`` (a :class:`~streams.state.State`: ``get(key)``)."""
        raise NotImplementedError

    def execute(self, tuple: TridentTuple, result: Any, collector: TridentCollector) -> None:  # noqa: A002
        """Emit the output fields for ``tuple`` and its ``result`` (default: the result as the one output field)."""
        collector.emit([result])


class MapGet(QueryFunction):
    """The state's value of each key (Storm's ``MapGet``); a key never written reads as None."""

    @override
    def query(self, state: Any, keys: list[Any]) -> list[Any]:
        return [state.get(k) for k in keys]


@dataclass(frozen=True)
class StateFactory:
    """Where ``persistent_aggregate`` keeps its state: its ``name`` and its Trident semantics ``kind``.

    Stored as ``<topology>.<name>`` in ``squall.state.url`` (SQLite or PostgreSQL).

    ``transactional`` (``(txid, value)``, Storm's ``TransactionalMap``) needs a transactional
    spout; ``opaque`` (``(txid, prev, curr)``, ``OpaqueMap``) works with either spout.
    """

    name: str
    kind: str = "opaque"

    def __post_init__(self) -> None:
        if self.kind not in ("transactional", "opaque"):
            raise TopologyError(f"[StateFactory] kind must be 'transactional' or 'opaque', got {self.kind!r}")


def as_function(fn: Function | Callable[..., Iterable[Any] | None], out_fields: Sequence[str]) -> Callable[[TridentTuple], list[list[Any]]]:
    """``fn`` as ``tuple -> outputs``: a :class:`Function`, or a callable of the input values returning an iterable of outputs.

    For one output field, each item of the iterable is that field's value.
    """
    if isinstance(fn, Function):

        def run_function(t: TridentTuple) -> list[list[Any]]:
            c = TridentCollector()
            fn.execute(t, c)
            return c.out

        return run_function
    if not callable(fn):
        raise TopologyError(f"[each] needs a Function or a callable, got {type(fn).__name__}")
    single = len(out_fields) == 1

    def run_callable(t: TridentTuple) -> list[list[Any]]:
        got = fn(*t.values)
        if got is None:
            return []
        return [[x] for x in got] if single else [list(x) for x in got]

    return run_callable
