"""Direct and custom grouping errors, through the real Router and collectors."""

from __future__ import annotations

from typing import Any

import pytest

from streams import BasicBolt, FatalError, KafkaSpout, TopologyBuilder, TopologyContext, TopologyError
from streams.runtime.acks import AckBuffer
from streams.runtime.collectors import BoltOutputCollectorImpl
from streams.runtime.routing import Router
from tests.unit.sim import Capture


class Two(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["x"])
        declarer.declare(["x"], stream="d", direct=True)

    def execute(self, tuple: Any, collector: Any) -> None:  # noqa: A002
        pass


class Sink(BasicBolt):
    def execute(self, tuple: Any, collector: Any) -> None:  # noqa: A002
        pass


class Bad:
    def prepare(self, context: Any, stream: Any, target_tasks: list[int]) -> None:
        self.targets = target_tasks

    def choose_tasks(self, task_id: int, values: list[Any]) -> list[int]:
        return [max(self.targets) + 1]


def collector_for(component: str, custom: Any = None) -> tuple[BoltOutputCollectorImpl, Any]:
    b = TopologyBuilder()
    b.set_spout("s", KafkaSpout(), 1)
    b.set_bolt("a", Two(), 1).shuffle_grouping("s")
    b.set_bolt("direct_sink", Sink(), 1, num_tasks=3).direct_grouping("a", "d")
    decl = b.set_bolt("other", Sink(), 1, num_tasks=2)
    if custom is not None:
        decl.custom_grouping("a", custom)
    else:
        decl.shuffle_grouping("a")
    t = b.create_topology("t")
    task = t.components[component].task_base
    ctx = TopologyContext(t, component, task)
    return BoltOutputCollectorImpl(Router(t, component, ctx), task, Capture(), AckBuffer("acker", 1)), t


def test_emit_direct_reaches_only_the_named_task_and_emit_returns_task_ids() -> None:
    coll, t = collector_for("a")
    capture = coll.produce
    assert isinstance(capture, Capture)
    target = t.components["direct_sink"].task_base + 2
    coll.emit_direct(target, ["v"], stream="d")
    assert [topic for topic, _ in capture.records] == ["squall.t.direct_sink"]
    assert capture.partitions == [2]  # partition = the task's index in its component
    other = list(t.components["other"].task_ids)
    chosen = [coll.emit(["v"]) for _ in range(4)]
    assert all(len(c) == 1 and c[0] in other for c in chosen)
    assert {c[0] for c in chosen} == set(other)  # shuffle over both tasks


def test_emit_on_a_direct_stream_needs_emit_direct() -> None:
    coll, _ = collector_for("a")
    with pytest.raises(FatalError, match=r"\[a\] emit on direct stream 'd': use emit_direct"):
        coll.emit(["v"], stream="d")


def test_emit_direct_on_a_non_direct_stream_is_an_error() -> None:
    coll, t = collector_for("a")
    with pytest.raises(FatalError, match=r"\[a\] emit_direct on stream 'default', which is not declared direct"):
        coll.emit_direct(t.components["other"].task_base, ["v"])


def test_emit_direct_to_a_task_that_does_not_subscribe_directly() -> None:
    coll, _ = collector_for("a")
    with pytest.raises(FatalError, match=r"\[a\] emit_direct to task 0, which does not subscribe directly"):
        coll.emit_direct(0, ["v"], stream="d")


def test_emit_on_an_undeclared_stream_names_component_and_stream() -> None:
    coll, _ = collector_for("a")
    with pytest.raises(FatalError, match=r"\[a\] emit on undeclared stream 'nope'"):
        coll.emit(["v"], stream="nope")


def test_custom_grouping_choosing_a_foreign_task_is_an_error() -> None:
    coll, _ = collector_for("a", custom=Bad())
    with pytest.raises(TopologyError, match=r"\[other\] custom grouping chose task"):
        coll.emit(["v"])


def test_custom_grouping_without_choose_tasks_is_rejected_at_build() -> None:
    with pytest.raises(TopologyError, match=r"\[other\] custom grouping needs a CustomStreamGrouping"):
        collector_for("a", custom=object())
