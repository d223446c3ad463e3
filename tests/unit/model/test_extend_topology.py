"""Spout.extend_topology: the builder lets each spout extend the topology (Storm's
BatchSubtopologyBuilder.extendTopology), so the builder never imports the transactional machinery."""

from __future__ import annotations

from typing import Any

import pytest

from streams import BasicBolt, GroupingKind, KafkaSpout, TopologyBuilder, TopologyError, TransactionalKafkaSpout
from streams.model.spec import ComponentDef, Subscription
from streams.transactional.coordinated_bolt import CoordinatedBolt


class Echo(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["value"])

    def execute(self, tuple: Any, collector: Any) -> None:  # noqa: A002
        collector.emit([tuple[0]])


class Tapping(KafkaSpout):
    """A spout that adds an all-grouped subscription of every bolt to itself."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, list[str]]] = []

    def extend_topology(self, component_id: str, defs: list[ComponentDef]) -> None:
        self.calls.append((component_id, [d.id for d in defs]))
        for d in defs:
            if not d.is_spout and not any(s.component == component_id for s in d.inputs):
                d.inputs.append(Subscription(component_id, "default", GroupingKind.ALL))


def test_each_spout_extends_copies_of_the_definitions_once() -> None:
    tap = Tapping()
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout())
    b.set_spout("tap", tap)
    b.set_bolt("echo", Echo()).shuffle_grouping("lines")
    first = b.create_topology("t1")
    second = b.create_topology("t2")
    assert tap.calls == [("tap", ["lines", "tap", "echo"]), ("tap", ["lines", "tap", "echo"])]
    assert [(s.component, s.kind) for s in first.components["echo"].inputs] == [("lines", "shuffle"), ("tap", "all")]
    assert [s.component for s in second.components["echo"].inputs] == ["lines", "tap"]  # the builder's own defs were not changed


def test_a_transactional_spout_wraps_every_bolt_through_the_hook() -> None:
    b = TopologyBuilder()
    b.set_spout("lines", TransactionalKafkaSpout(partitions=2))
    b.set_bolt("echo", Echo(), 2).shuffle_grouping("lines")
    t = b.create_topology("tx")
    assert t.transactional and isinstance(t.components["echo"].obj, CoordinatedBolt)
    assert ("lines", "__batch_end", "direct") in [(s.component, s.stream, s.kind) for s in t.components["echo"].inputs]


def test_a_transactional_spout_beside_another_spout_is_refused_naming_it() -> None:
    b = TopologyBuilder()
    b.set_spout("plain", KafkaSpout())
    b.set_spout("batches", TransactionalKafkaSpout())
    b.set_bolt("echo", Echo()).shuffle_grouping("batches")
    with pytest.raises(TopologyError, match=r"\[batches\] a transactional topology has exactly one spout, got \['plain', 'batches'\]"):
        b.create_topology("tx")
