"""How the Stream API compiles (Storm's StreamBuilder): fusion, grouping placement, anchoring, parallelism."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from examples import flights_join, wordcount_stream
from streams import KafkaSpout, RecordTranslator
from streams.api import Count, StreamBuilder, TumblingWindows
from streams.api.bolts import AggregateBolt, ProcessorBolt, StateBolt, WindowBolt
from streams.model.bolt import BasicBoltExecutor
from streams.model.spec import GroupingKind, Topology
from streams.model.stateful import StatefulBoltExecutor
from streams.model.windowed import WindowedBoltExecutor
from streams.testing import run_topology

STATELESS = ["filter", "map", "flat_map", "peek", "key_by", "map_values"]


def spout() -> KafkaSpout:
    return KafkaSpout(translator=RecordTranslator("line"))


def inner(topology: Topology, cid: str) -> object:
    obj = topology.components[cid].obj
    return getattr(obj, "inner", obj)


@settings(max_examples=40)
@given(st.lists(st.sampled_from(STATELESS), min_size=1, max_size=8))
def test_consecutive_stateless_operations_fuse_into_one_bolt(ops: list[str]) -> None:
    b = StreamBuilder()
    s = b.new_stream(spout(), name="lines")
    keyed = False
    for op in ops:
        if op == "key_by":
            s, keyed = s.key_by(len), True
        elif op == "map_values":
            s = s.map_values(str) if keyed else s.map(str)
        elif op == "flat_map":
            s, keyed = s.flat_map(lambda v: [v]), False
        elif op == "map":
            s, keyed = s.map(lambda v: v), False
        else:
            s = getattr(s, op)(lambda v: True)
    s.set_output("squall.{topology}.out") if keyed else s.key_by(str).set_output("squall.{topology}.out")
    t = b.build("fused")
    bolts = t.bolts
    assert len(bolts) == 1, [d.id for d in bolts]  # however many operations: one bolt
    assert isinstance(bolts[0].obj, BasicBoltExecutor) and isinstance(bolts[0].obj.inner, ProcessorBolt)
    assert len(bolts[0].obj.inner.chain.steps) == len(ops) + (0 if keyed else 1)
    assert [(s.component, s.kind) for s in bolts[0].inputs] == [("lines", GroupingKind.SHUFFLE)]


def test_a_key_change_adds_a_fields_grouping_on_key_and_what_follows_fuses_after_it() -> None:
    b = StreamBuilder()
    counts = b.new_stream(spout(), 3, name="lines").flat_map(str.split).map_to_pair(lambda w: (w, 1)).count_by_key()
    counts.filter(lambda p: p[1] > 1).map_values(str).set_output("squall.{topology}.out")
    t = b.build("wc")
    assert [d.id for d in t.bolts] == ["flat_map1", "count_by_key2"]
    [sub] = t.components["count_by_key2"].inputs
    assert (sub.component, sub.kind, sub.fields) == ("flat_map1", GroupingKind.FIELDS, ("key",))
    agg = inner(t, "count_by_key2")
    assert isinstance(agg, AggregateBolt) and [s.kind for s in agg.chain.steps] == ["filter", "map_values"]
    assert [t.components[c].parallelism for c in ("lines", "flat_map1", "count_by_key2")] == [3, 3, 3]  # inherited from the spout


def test_global_aggregates_take_a_global_grouping_on_one_task_and_repartition_a_shuffle() -> None:
    b = StreamBuilder()
    s = b.new_stream(spout(), 2, name="lines").map(len).repartition(4)
    s.map(str).key_by(str).set_output("squall.{topology}.lengths")
    s.reduce(max).key_by(str).set_output("squall.{topology}.max")
    t = b.build("g")
    assert [(d.id, d.parallelism, [(x.component, x.kind) for x in d.inputs]) for d in t.bolts] == [
        ("map1", 2, [("lines", GroupingKind.SHUFFLE)]),
        ("repartition2", 4, [("map1", GroupingKind.SHUFFLE)]),
        ("reduce3", 1, [("repartition2", GroupingKind.GLOBAL)]),
    ]


def test_windows_joins_and_state_compile_to_windowed_and_stateful_bolts() -> None:
    t = flights_join.topology()
    kinds = {cid: type(inner(t, cid)).__name__ for cid in (d.id for d in t.bolts)}
    assert kinds == {
        "map1": "ProcessorBolt",
        "update_state_by_key2": "StateBolt",
        "update_state_by_key3": "StateBolt",
        "join4": "WindowBolt",
        "count_by_key5": "AggregateBolt",
    }
    assert isinstance(t.components["join4"].obj, WindowedBoltExecutor) and isinstance(inner(t, "join4"), WindowBolt)
    assert isinstance(t.components["update_state_by_key2"].obj, StatefulBoltExecutor) and isinstance(inner(t, "update_state_by_key2"), StateBolt)
    join_inputs = {(s.component, s.kind, s.fields) for s in t.components["join4"].inputs}
    assert join_inputs == {("update_state_by_key3", GroupingKind.FIELDS, ("key",)), ("map1", GroupingKind.FIELDS, ("key",))}
    # a table's updates and the flights that query it reach it by the same key
    assert {(s.component, s.fields) for s in t.components["update_state_by_key2"].inputs} == {("map1", ("key",))}
    assert len(t.components["update_state_by_key2"].inputs) == 2


def test_every_emit_is_anchored() -> None:
    result = run_topology(wordcount_stream.topology(), {"lines": ["the cat sat", "the end"]})
    bolt_emits = [e for (cid, _), es in result.emitted.items() if cid != "lines" for e in es]
    assert bolt_emits and all(e.anchors for e in bolt_emits), [e for e in bolt_emits if not e.anchors]
    counts = [e for e in bolt_emits if e.component == "count_by_key2"]
    assert {e.values[0]: len(e.anchors) for e in counts} == {"the": 2, "cat": 1, "sat": 1, "end": 1}  # anchored to every word it counted


def test_the_stream_word_count_is_fifteen_lines_of_user_code() -> None:
    source = Path(wordcount_stream.__file__).read_text(encoding="utf-8")
    code = re.sub(r'^"""(.|\n)*?"""\n', "", source)
    lines = [line for line in code.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(lines) <= 15, lines


def test_the_compiled_topology_is_an_ordinary_one() -> None:
    b = StreamBuilder()
    left = b.new_stream(spout(), name="a").key_by(len)
    right = b.new_stream(spout(), name="b").key_by(len)
    left.window(TumblingWindows.of(Count(2))).join(right).set_output("squall.{topology}.out")
    t = b.build("plain", {"topology.workers": 3})
    assert isinstance(t, Topology) and t.conf == {"topology.workers": 3}
    assert [o.topic for o in t.outputs] == ["squall.{topology}.out"]
