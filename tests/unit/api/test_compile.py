"""How the Stream API compiles (Storm's StreamBuilder): fusion, grouping placement, anchoring, parallelism."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from examples import flights_join, wordcount_stream
from streams import KafkaSpout, RecordTranslator
from streams.api import CombinerAggregator, Count, StreamBuilder, TumblingWindows
from streams.api.bolts import AggregateBolt, ProcessorBolt, StateBolt, WindowBolt
from streams.model.bolt import BasicBolt, BasicBoltExecutor, BasicOutputCollector
from streams.model.component import OutputFieldsDeclarer
from streams.model.spec import GroupingKind, Topology
from streams.model.stateful import StatefulBoltExecutor
from streams.model.tuple import Tuple
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


def test_every_emit_to_a_bolt_is_anchored_and_a_leaf_aggregate_acks_after_writing_its_results() -> None:
    result = run_topology(wordcount_stream.topology(), {"lines": ["the cat sat", "the end"]})
    words = result.emitted[("flat_map1", "s1")]
    # flat_map1 combines its words per tick: one partial count per word, anchored to every line it counts
    assert sorted(tuple(e.values) for e in words) == [("cat", 1), ("end", 1), ("sat", 1), ("the", 2)]
    assert {e.values[0]: sorted(a[0] for a in e.anchors) for e in words}["the"] == ["the cat sat", "the end"]
    # count_by_key2 writes only to set_output, which no bolt reads: its results go out unanchored
    # (nothing would track the anchors), and the words are acked after them, as the hand-written
    # word count does; so every line is acked and the output holds the counts
    counts = result.emitted[("count_by_key2", "s2")]
    assert counts and not any(e.anchors for e in counts)
    assert result.final_outcomes("lines") == {"acked": 2}
    assert result.output() == {"the": 2, "cat": 1, "sat": 1, "end": 1}


class Keep(BasicBolt):
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["key", "value"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        collector.emit(list(tuple.values))


@pytest.mark.parametrize("combine", [False, True])
def test_an_aggregate_that_a_bolt_reads_anchors_each_result_to_every_tuple_it_counted(combine: bool) -> None:
    b = StreamBuilder(combine=combine)
    counts = b.new_stream(spout(), name="lines").flat_map(str.split).map_to_pair(lambda w: (w, 1)).count_by_key()
    counts.to(Keep(), name="keep")
    result = run_topology(b.build("anchored"), {"lines": ["the cat sat", "the end"]})
    counts_out = result.emitted[("count_by_key2", "s2")]
    if combine:  # one partial per word, itself anchored to every line it counts
        assert {e.values[0]: e.anchors for e in counts_out} == {"the": (("the", 2),), "cat": (("cat", 1),), "sat": (("sat", 1),), "end": (("end", 1),)}
        assert {e.values[0]: len(e.anchors) for e in result.emitted[("flat_map1", "s1")]} == {"the": 2, "cat": 1, "sat": 1, "end": 1}
    else:
        assert {e.values[0]: len(e.anchors) for e in counts_out} == {"the": 2, "cat": 1, "sat": 1, "end": 1}
    assert result.final_outcomes("lines") == {"acked": 2}


class NoDuplicates(CombinerAggregator):
    """Counts, but has no result for a count above 1 (a result the output cannot take)."""

    def init(self) -> int:
        return 0

    def apply(self, aggregate: int, value: Any) -> int:
        return aggregate + 1

    def merge(self, a: int, b: int) -> int:
        return a + b

    def result(self, aggregate: int) -> int:
        if aggregate > 1:
            raise ValueError(f"count {aggregate}")
        return aggregate


@pytest.mark.parametrize("leaf", [True, False])
def test_a_result_that_raises_fails_the_tuples_of_its_key_alone(leaf: bool) -> None:
    b = StreamBuilder()
    lines = b.new_stream(spout(), name="lines")
    counts = lines.flat_map(str.split).map_to_pair(lambda w: (w, 1)).aggregate_by_key(NoDuplicates())
    if leaf:
        counts.set_output("squall.{topology}.out")
    else:
        counts.to(Keep(), name="keep")
    topology = b.build("raises", {"squall.spout.tree.records": 1})  # one line per tree: a failed line replays alone
    result = run_topology(topology, {"lines": ["dup dup", "one two"]})
    [dup, fine] = result.input_outcomes("lines")
    assert fine == ["acked"]
    assert dup[0] == "failed" and "acked" not in dup  # replayed, failing each time, until dead-lettered
    errors = [r for r in result.reports if r.component == "aggregate_by_key2"]
    assert errors and all("forwarding key 'dup' raised ValueError: count" in e.message for e in errors)


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


def test_a_repartition_before_an_operation_that_regroups_sets_its_parallelism_and_starts_no_bolt() -> None:
    b = StreamBuilder()
    words = b.new_stream(spout(), 2, name="lines").repartition(1).flat_map(str.split).map_to_pair(lambda w: (w, 1))
    words.repartition(3).count_by_key().set_output("squall.{topology}.counts")
    words.repartition(4).window(TumblingWindows.of(Count(2))).count_by_key().set_output("squall.{topology}.windowed")
    t = b.build("hops")
    # the first repartition starts the bolt its flat_map runs in, named after it; the others run nothing
    assert {d.id: d.parallelism for d in t.bolts} == {"flat_map1": 1, "count_by_key2": 3, "count_by_key3": 4}
    assert {(s.component, s.kind) for d in t.bolts[1:] for s in d.inputs} == {("flat_map1", GroupingKind.FIELDS)}
    # and it counts as before: the words reach count_by_key2's 3 tasks by key
    b = StreamBuilder()
    words = b.new_stream(spout(), 2, name="lines").repartition(1).flat_map(str.split).map_to_pair(lambda w: (w, 1))
    words.repartition(3).count_by_key().set_output("squall.{topology}.counts")
    assert run_topology(b.build("hop"), {"lines": ["a b a", "c b"]}).output() == {"a": 2, "b": 2, "c": 1}


def test_a_repartition_that_runs_something_or_follows_a_spout_keeps_its_bolt() -> None:
    b = StreamBuilder()
    lines = b.new_stream(spout(), 2, name="lines")
    lines.repartition(3).key_by(len).count_by_key().set_output("squall.{topology}.by_length")  # after a spout: the keys are read in a bolt
    pairs = lines.map_to_pair(lambda w: (w, 1))
    pairs.repartition(2).map_values(lambda n: n * 10).reduce_by_key(lambda a, c: a + c).set_output("squall.{topology}.tens")
    t = b.build("kept")
    assert {d.id: d.parallelism for d in t.bolts} == {"key_by1": 3, "count_by_key2": 3, "map_to_pair3": 2, "map_values4": 2, "reduce_by_key5": 2}
    assert [(s.component, s.kind) for s in t.components["map_values4"].inputs] == [("map_to_pair3", GroupingKind.SHUFFLE)]
