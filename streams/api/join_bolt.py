"""JoinBolt: joins the streams of several components within a window (storm-client's ``org.apache.storm.bolt.JoinBolt``).

Hash joins, in the order declared: the first source's tuples, then each ``join`` or
``left_join`` of a new source on its field. Storm's rule: each source joins on one field,
the one it is grouped on, so ``join(new, field, prior)`` compares ``new.field`` with the
field ``prior`` was joined on (SQL: ``inner join new on new.field = prior.<join field>``).
``select`` names the output fields as ``source.field`` (or Storm's ``source:field``); each output tuple holds them in that order, None for a missing side of a
left join. It is a :class:`~streams.WindowedBolt`: set a window (``with_tumbling_window``,
``with_window``, by count or time); its emits are anchored to the window's tuples and acked
when they expire.

Sources are component ids (``selector="source"``, Storm's ``Selector.SOURCE``) or stream ids
(``selector="stream"``). Subscribe it to every source with a fields grouping on the join
field (or a global grouping), so that equal keys meet in one task.

The check at build time names the bolt and the field: a join on a field a source does not
declare, a selected field nobody declares, or a source the bolt does not subscribe to:

>>> from streams import Count, TopologyBuilder
>>> from streams.kafka.spout import KafkaSpout, RecordTranslator
>>> class Csv(RecordTranslator):
...     def __init__(self, *fields):
...         super().__init__()
...         self.names = fields
...     def streams(self):
...         return {"default": self.names}
...     def translate(self, msg):
...         return "default", msg.value().decode().split(",")
>>> b = TopologyBuilder()
>>> b.set_spout("flights", KafkaSpout(translator=Csv("carrier", "flight")))
<...>
>>> b.set_spout("airlines", KafkaSpout(translator=Csv("code", "name")))
<...>
>>> joiner = JoinBolt("flights", "carrier").join("airlines", "carrier", "flights").select("flights.flight, airlines.name")
>>> b.set_bolt("join", joiner.with_tumbling_window(Count(10))).fields_grouping("flights", ["carrier"]).fields_grouping("airlines", ["code"])
<...>
>>> b.create_topology("t")
Traceback (most recent call last):
...
streams.exceptions.TopologyError: [join] join on field 'carrier' of 'airlines', which declares ['code', 'name']

Joined on the right field, the flights meet their airline's name:

>>> from streams.testing import run_topology
>>> b = TopologyBuilder()
>>> b.set_spout("flights", KafkaSpout(translator=Csv("carrier", "flight")))
<...>
>>> b.set_spout("airlines", KafkaSpout(translator=Csv("code", "name")))
<...>
>>> joiner = JoinBolt("flights", "carrier").join("airlines", "code", "flights").select("flights.flight, airlines.name")
>>> b.set_bolt("join", joiner.with_tumbling_window(Count(3))).fields_grouping("flights", ["carrier"]).fields_grouping("airlines", ["code"])
<...>
>>> result = run_topology(b.create_topology("t"), {"airlines": ["UA,United"], "flights": ["UA,1545", "AA,11"]})
>>> result.values("join")
[('1545', 'United')]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import override

from streams.api.partials import hashable
from streams.exceptions import TopologyError
from streams.model.component import OutputFieldsDeclarer
from streams.model.tuple import DEFAULT_STREAM, Tuple
from streams.model.windowed import TupleWindow, WindowedBolt

SYSTEM_PREFIX = "__"


class JoinBolt(WindowedBolt):
    """Joins sources on fields within each window (module docstring).

    Args:
      source: the first source (a component id, or a stream id with ``selector="stream"``).
      field: the field of ``source`` the first join compares.
      selector: ``source`` (component ids) or ``stream`` (stream ids).

    Raises TopologyError (at build time) naming the bolt and the field.

    >>> from streams import Count
    >>> j = JoinBolt("a", "k").join("b", "k", "a").select("a.k, a.x, b.y").with_tumbling_window(Count(2))
    >>> [c.how for c in j.clauses], j.output_fields
    (['inner'], ['k', 'x', 'y'])
    """

    def __init__(self, source: str, field: str, selector: str = "source") -> None:
        if selector not in ("source", "stream"):
            raise TopologyError(f"[JoinBolt] selector must be 'source' or 'stream', got {selector!r}")
        self.source = source
        self.field = field
        self.selector = selector
        self.clauses: list[_Clause] = []
        self.projection: list[tuple[str, str]] = []
        self.output_stream = DEFAULT_STREAM
        self.component = "JoinBolt"

    def join(self, other: str, field: str, prior: str) -> JoinBolt:
        """Inner join ``other`` on ``other.field == prior.<prior's field>`` (Storm's ``join``).

        >>> j = JoinBolt("a", "k").join("b", "code", "a")
        >>> [(c.source, c.field, c.prior, c.how) for c in j.clauses]
        [('b', 'code', 'a', 'inner')]
        """
        return self._clause(other, field, prior, "inner")

    def left_join(self, other: str, field: str, prior: str) -> JoinBolt:
        """Left join: rows of the sources so far without a match in ``other`` are kept, with None for its fields (Storm's ``leftJoin``).

        >>> from streams import Count, TopologyBuilder
        >>> from streams.kafka.spout import KafkaSpout, RecordTranslator
        >>> from streams.testing import run_topology
        >>> b = TopologyBuilder()
        >>> _ = b.set_spout("a", KafkaSpout(translator=RecordTranslator("k")))
        >>> _ = b.set_spout("b", KafkaSpout(translator=RecordTranslator("code")))
        >>> joiner = JoinBolt("a", "k").left_join("b", "code", "a").select("a.k, b.code").with_tumbling_window(Count(3))
        >>> _ = b.set_bolt("join", joiner).global_grouping("a").global_grouping("b")
        >>> sorted(run_topology(b.create_topology("lj"), {"a": ["x", "y"], "b": ["x"]}).values("join"), key=str)
        [('x', 'x'), ('y', None)]
        """
        return self._clause(other, field, prior, "left")

    def _clause(self, other: str, field: str, prior: str, how: str) -> JoinBolt:
        known = [self.source, *(c.source for c in self.clauses)]
        if prior not in known:
            raise TopologyError(f"[JoinBolt] join of {other!r} on prior {prior!r}, which is not joined yet (joined: {known})")
        if other in known:
            raise TopologyError(f"[JoinBolt] {other!r} is joined twice")
        self.clauses.append(_Clause(other, field, prior, how))
        return self

    def select(self, fields: str) -> JoinBolt:
        """The output fields, comma separated, each ``source.field`` or ``source:field`` (Storm's ``select``).

        >>> JoinBolt("a", "k").join("b", "code", "a").select("a.k, b:code").output_fields
        ['k', 'code']
        """
        projection = []
        for item in (f.strip() for f in fields.split(",")):
            sep = ":" if ":" in item else "."
            source, _, name = item.partition(sep)
            if not source or not name:
                raise TopologyError(f"[JoinBolt] select item {item!r} is not source.field")
            projection.append((source, name))
        names = [n for _, n in projection]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise TopologyError(f"[JoinBolt] select names fields {dup} twice: output fields must be unique")
        self.projection = projection
        return self

    def with_output_stream(self, stream: str) -> JoinBolt:
        """Emit on ``stream`` instead of ``default`` (Storm's ``withOutputStream``).

        >>> j = JoinBolt("a", "k").join("b", "code", "a").select("a.k, b.code").with_output_stream("joined")
        >>> j.output_stream, j.output_fields
        ('joined', ['k', 'code'])
        """
        self.output_stream = stream
        return self

    @property
    def output_fields(self) -> list[str]:
        """The output tuple's field names (the selected fields' names)."""
        return [n for _, n in self.projection]

    @property
    def sources(self) -> list[str]:
        """Every source, in join order."""
        return [self.source, *(c.source for c in self.clauses)]

    # -- topology time -----------------------------------------------------------------------------
    @override
    def validate(self, component_id: str) -> None:
        self.component = component_id
        if not self.clauses:
            raise TopologyError(f"[{component_id}] a JoinBolt needs at least one join(...) or left_join(...)")
        if not self.projection:
            raise TopologyError(f"[{component_id}] a JoinBolt needs select('source.field, ...')")
        for source, name in self.projection:
            if source not in self.sources:
                raise TopologyError(f"[{component_id}] select {source}.{name}: {source!r} is not joined (sources: {self.sources})")

    @override
    def validate_inputs(self, component_id: str, inputs: Mapping[tuple[str, str], tuple[str, ...]]) -> None:
        declared: dict[str, set[str]] = {}
        for (component, stream), fields in inputs.items():
            if stream.startswith(SYSTEM_PREFIX):
                continue
            declared.setdefault(component if self.selector == "source" else stream, set()).update(fields)
        for source in self.sources:
            if source not in declared:
                raise TopologyError(f"[{component_id}] joins {self.selector} {source!r} but does not subscribe to it (inputs: {sorted(declared)})")

        def need(source: str, field: str, what: str) -> None:
            if field not in declared[source]:
                raise TopologyError(f"[{component_id}] {what} field {field!r} of {source!r}, which declares {sorted(declared[source])}")

        need(self.source, self.field, "join on")
        for c in self.clauses:
            need(c.source, c.field, "join on")
            need(c.prior, self.field if c.prior == self.source else _field_of(self, c.prior), "join on")
        for source, name in self.projection:
            need(source, name, "select")

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(self.output_fields, stream=self.output_stream)

    # -- run time ----------------------------------------------------------------------------------
    def _name(self, t: Tuple) -> str:
        return t.source_component if self.selector == "source" else t.stream

    @override
    def execute(self, window: TupleWindow) -> None:
        for values in self.join_window(window.get()):
            self.collector.emit(values, stream=self.output_stream)

    def join_window(self, tuples: list[Tuple]) -> list[list[Any]]:
        """The joined, projected rows of one window's ``tuples`` (in arrival order of the first source)."""
        by_source: dict[str, list[Tuple]] = {}
        for t in tuples:
            by_source.setdefault(self._name(t), []).append(t)
        rows: list[dict[str, Tuple | None]] = [{self.source: t} for t in by_source.get(self.source, [])]
        for c in self.clauses:
            table: dict[Any, list[Tuple]] = {}
            for t in by_source.get(c.source, []):
                table.setdefault(hashable(t.get(c.field)), []).append(t)
            prior_field = self.field if c.prior == self.source else _field_of(self, c.prior)
            joined: list[dict[str, Tuple | None]] = []
            for row in rows:
                prior = row.get(c.prior)
                matches = table.get(hashable(prior.get(prior_field)), []) if prior is not None else []
                if matches:
                    joined.extend({**row, c.source: m} for m in matches)
                elif c.how == "left":
                    joined.append({**row, c.source: None})
            rows = joined
        out = []
        for row in rows:
            values = []
            for source, name in self.projection:
                got = row.get(source)
                values.append(None if got is None else got.get(name))
            out.append(values)
        return out


class _Clause:
    """One ``join``/``left_join``: ``source.field == prior.<its join field>``."""

    def __init__(self, source: str, field: str, prior: str, how: str) -> None:
        self.source = source
        self.field = field
        self.prior = prior
        self.how = how

    def __repr__(self) -> str:
        return f"_Clause({self.source!r}, {self.field!r}, {self.prior!r}, {self.how!r})"


def _field_of(bolt: JoinBolt, source: str) -> str:
    """The field ``source`` was joined on (its own join field)."""
    for c in bolt.clauses:
        if c.source == source:
            return c.field
    return bolt.field
