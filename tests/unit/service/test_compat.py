"""``squall update``'s compatibility check (service.control.compat): what may roll worker by worker, and the refusals that name the component."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from service.control.compat import compare
from streams import BasicBolt, KafkaSpout, TopologyBuilder
from streams.model.spec import Topology


class Emits(BasicBolt):
    def __init__(self, fields: tuple[str, ...], side: bool = False, direct: bool = False) -> None:
        self.fields = fields
        self.side = side
        self.direct = direct

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(list(self.fields))
        if self.side:
            declarer.declare(["x"], stream="side", direct=self.direct)

    def execute(self, tuple: Any, collector: Any) -> None:  # noqa: A002
        pass


@dataclass(frozen=True)
class Shape:
    """The word count's shape, with the knobs an update may turn."""

    split_fields: tuple[str, ...] = ("word",)
    count_tasks: int = 4
    count_executors: int = 2
    grouping: str = "fields"
    side: bool = False
    direct: bool = False
    extra_bolt: bool = False
    extra_spout: bool = False
    drop_sink: bool = False


def build(shape: Shape) -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(), 2)
    if shape.extra_spout:
        b.set_spout("more", KafkaSpout(), 1)
    b.set_bolt("split", Emits(shape.split_fields, shape.side, shape.direct), 1).shuffle_grouping("lines")
    count = b.set_bolt("count", Emits(("word", "n")), shape.count_executors, num_tasks=shape.count_tasks)
    if shape.grouping == "fields":
        count.fields_grouping("split", [shape.split_fields[0]])
    else:
        count.shuffle_grouping("split")
    if not shape.drop_sink:
        b.set_bolt("sink", Emits(("n",)), 1).global_grouping("count")
    if shape.extra_bolt:
        b.set_bolt("audit", Emits(("a",)), 1).shuffle_grouping("count")
    return b.create_topology("wc")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.booleans(), st.booleans())
def test_the_same_shape_with_other_executors_new_streams_and_a_new_last_bolt_is_compatible(executors: int, side: bool, extra_bolt: bool) -> None:
    """Executors per component change freely (rebalance does it today), and additions after the existing components keep every task id."""
    old = build(Shape())
    new = build(Shape(count_executors=executors, side=side, extra_bolt=extra_bolt))
    diff = compare(old, new)
    assert diff.compatible, diff.reason()
    assert diff.added == (("audit",) if extra_bolt else ())
    assert diff.streams_added == ((("split", "side"),) if side else ())
    assert compare(old, old).compatible and compare(old, old).summary() == "same components and streams"


def test_a_removed_last_bolt_drains_and_is_compatible() -> None:
    diff = compare(build(Shape(extra_bolt=True)), build(Shape()))
    assert diff.compatible and diff.removed == ("audit",) and "removed: audit" in diff.summary()


def test_each_incompatible_change_is_refused_naming_the_component_and_what_changed() -> None:
    old = build(Shape(side=True))
    cases = {
        "count_tasks": (replace(Shape(side=True), count_tasks=6), "[count] its task count would change from 4 to 6"),
        "fields": (replace(Shape(side=True), split_fields=("token",)), "[split] stream 'default' would change its fields from ['word'] to ['token']"),
        "grouping": (
            replace(Shape(side=True), grouping="shuffle"),
            "[count] its subscription to split/default would change grouping from fields(word) to shuffle",
        ),
        "direct": (replace(Shape(side=True), direct=True), "[split] stream 'side' would become direct"),
        "new spout": (replace(Shape(side=True), extra_spout=True), "[split] its global task ids would move from 2..2 to 3..3"),
        "removed middle": (replace(Shape(side=True), drop_sink=True, extra_bolt=False), None),
    }
    for name, (shape, refusal) in cases.items():
        diff = compare(old, build(shape))
        if refusal is None:  # the sink was the last component: nothing after it moves
            assert diff.compatible and diff.removed == ("sink",), name
            continue
        assert not diff.compatible, name
        assert diff.reason().splitlines()[0].startswith(refusal), (name, diff.reason())


def test_a_spout_that_became_a_bolt_is_refused() -> None:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(), 2)
    b.set_bolt("split", Emits(("word",)), 1).shuffle_grouping("lines")
    old = b.create_topology("wc")
    b = TopologyBuilder()
    b.set_spout("src", KafkaSpout(), 2)
    b.set_bolt("lines", Emits(("line",)), 2).shuffle_grouping("src")
    b.set_bolt("split", Emits(("word",)), 1).shuffle_grouping("lines")
    diff = compare(old, b.create_topology("wc"))
    assert str(diff.refusals[0]) == "[lines] would change from a spout to a bolt"
