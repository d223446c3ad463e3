"""Trident on the test kit: each operation against a direct computation, and exact counts when batches fail and tasks crash."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from examples import wordcount_trident
from streams import OpaqueKafkaSpout, RecordTranslator, TransactionalKafkaSpout
from streams.api.bolts import ProcessorBolt
from streams.api.chain import Chain
from streams.model.spec import Topology
from streams.testing import Faults, run_topology
from streams.trident import Aggregator, Count, Filter, Function, ReducerAggregator, StateFactory, Sum, TridentCollector, TridentTopology, TridentTuple

WORD = re.compile(r"[a-z']+")
lines_st = st.lists(st.lists(st.sampled_from(["ant", "bee", "cow", "dog"]), max_size=5).map(" ".join), max_size=25)


def direct(lines: list[str]) -> dict[str, int]:
    return dict(Counter(w for line in lines for w in WORD.findall(line.lower())))


def new(opaque: bool = False) -> tuple[TridentTopology, Any]:
    t = TridentTopology()
    spout = (OpaqueKafkaSpout if opaque else TransactionalKafkaSpout)(RecordTranslator("line"), partitions=2)
    return t, t.new_stream("lines", spout)


def emitted(result: Any, component: str) -> list[tuple[Any, ...]]:
    return [tuple(e.values) for (cid, stream), es in result.emitted.items() if cid == component and not stream.startswith("__") for e in es]


def test_the_trident_word_count_is_exact_when_batches_fail_and_a_task_crashes() -> None:
    lines = [f"{a} {b} the" for a in ("ant", "bee", "cow") for b in ("elk", "fox")] * 40
    faults = Faults().fail("persistent_aggregate", where=lambda t: t.get("word") == "the", times=3).crash("each", 1, after=60)
    result = run_topology(wordcount_trident.topology(), {"lines": lines}, faults=faults, config={"squall.batch.records": 25})
    assert result.output() == direct(lines)  # exact: a replayed batch is not applied twice
    assert result.crashes == [("each", 1)]
    trees = result.trees["lines"]
    assert any(mid[0] == "batch" and outs == ["failed"] for mid, outs in trees.items()), "a batch failed and was replayed"


@settings(max_examples=15)
@given(lines_st, st.booleans())
def test_persistent_count_equals_the_direct_count_on_either_spout(lines: list[str], opaque: bool) -> None:
    t, s = new(opaque)
    s.each(["line"], str.split, ["word"]).group_by(["word"]).persistent_aggregate(StateFactory("counts", "opaque"), Count(), ["count"])
    result = run_topology(t.build("tc"), {"lines": lines}, config={"squall.batch.records": 7})
    assert (result.output() if any(w for line in lines for w in line.split()) else {}) == direct(lines)


class Upper(Function):
    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:  # noqa: A002
        collector.emit([tuple.get("word").upper()])


class LongWords(Filter):
    def is_keep(self, tuple: TridentTuple) -> bool:  # noqa: A002
        return len(tuple[0]) > 2


def test_each_filter_map_flat_map_and_project_fuse_into_one_bolt_and_transform_each_tuple() -> None:
    t, s = new()
    words = s.each(["line"], str.split, ["word"]).filter(LongWords(), ["word"]).each(["word"], Upper(), ["upper"])
    out = words.map(lambda line, w, up: (line, w, up + "!")).flat_map(lambda line, w, up: [(line, w, up)] * 2).project(["upper", "word"])
    out.group_by(["upper"]).persistent_aggregate(StateFactory("n", "transactional"), Count(), ["n"])
    topo = t.build("ops")
    assert [d.id for d in topo.bolts] == ["each", "persistent_aggregate"]  # five operations, one bolt
    result = run_topology(topo, {"lines": ["an ant", "a bee"]})
    assert result.output() == {"ANT!": 2, "BEE!": 2}
    assert sorted(emitted(result, "each")) == [("ANT!", "ant"), ("ANT!", "ant"), ("BEE!", "bee"), ("BEE!", "bee")]


def inner_chain(topo: Topology, component: str) -> Chain:
    """The fused chain of a compiled Trident bolt (inside its CoordinatedBolt and BasicBoltExecutor)."""
    bolt: Any = topo.components[component].obj
    while not isinstance(bolt, ProcessorBolt):
        bolt = bolt.inner
    return bolt.chain


def test_each_then_a_project_to_its_output_is_one_step_unless_the_each_feeds_more() -> None:
    t, s = new()
    s.each(["line"], str.split, ["word"]).project(["word"]).group_by(["word"]).persistent_aggregate(StateFactory("c", "transactional"), Count(), ["n"])
    topo = t.build("fused")
    chain = inner_chain(topo, "each")
    assert chain.steps[0].singles and chain.steps[0].next == [[chain.ports[0]]]  # the project step is bypassed
    lines = ["an ant", "a bee an"]
    result = run_topology(topo, {"lines": lines})
    assert result.output() == direct(lines)
    assert sorted(emitted(result, "each")) == [("a",), ("an",), ("an",), ("ant",), ("bee",)]

    t, s = new()  # the each's output also goes on whole: nothing fused
    words = s.each(["line"], str.split, ["word"])
    words.project(["word"]).group_by(["word"]).persistent_aggregate(StateFactory("c", "transactional"), Count(), ["n"])
    words.group_by(["line"]).persistent_aggregate(StateFactory("l", "transactional"), Count(), ["n"])
    topo = t.build("shared")
    assert not any(step.singles for step in inner_chain(topo, "each").steps)
    result = run_topology(topo, {"lines": lines})
    assert result.output("shared.c") == direct(lines)
    assert result.output("shared.l") == {"an ant": 2, "a bee an": 3}


class Longest(ReducerAggregator):
    def init(self) -> str:
        return ""

    def reduce(self, current: str, tuple: TridentTuple) -> str:  # noqa: A002
        word: str = tuple[0]
        return max(current, word, key=lambda w: (len(w), w))


class FirstTwo(Aggregator):
    def init(self, batch_id: int, collector: TridentCollector) -> list[str]:
        return []

    def aggregate(self, state: list[str], tuple: TridentTuple, collector: TridentCollector) -> None:  # noqa: A002
        state.append(tuple[0])

    def complete(self, state: list[str], collector: TridentCollector) -> None:
        for w in sorted(state)[:2]:
            collector.emit([w])


@settings(max_examples=15)
@given(lines_st)
def test_batch_aggregations_per_group_and_global_equal_a_direct_computation_per_batch(lines: list[str]) -> None:
    t, s = new()
    words = s.each(["line"], str.split, ["word"]).each(["word"], lambda w: [len(w)], ["len"])
    words.group_by(["word"]).aggregate(Count(), ["n"])
    words.group_by(["len"]).aggregate(Longest(), ["longest"], input_fields=["word"])
    words.aggregate(Sum(), ["total"], input_fields=["len"])
    words.group_by(["len"]).aggregate(FirstTwo(), ["first"], input_fields=["word"])
    result = run_topology(t.build("aggs"), {"lines": lines}, config={"squall.batch.records": 1000})
    all_words = [w for line in lines for w in line.split()]
    if not all_words:
        return
    per_word: Counter[str] = Counter()
    for w, n in emitted(result, "aggregate"):
        per_word[w] += n
    assert per_word == Counter(all_words)  # each batch's counts; their sum is the direct count
    longest: dict[int, str] = {}
    for n, w in emitted(result, "aggregate2"):
        longest[n] = max(longest.get(n, ""), w, key=lambda x: (len(x), x))
    assert longest == {len(w): max(x for x in all_words if len(x) == len(w)) for w in all_words}
    assert sum(total for (total,) in emitted(result, "aggregate3")) == sum(len(w) for w in all_words)
    firsts: dict[int, list[str]] = defaultdict(list)
    for n, w in emitted(result, "aggregate4"):
        firsts[n].append(w)
    assert all(len(ws) <= 2 * len(lines) for ws in firsts.values())  # at most two per group and batch


def test_state_query_reads_the_committed_state_and_merge_and_join_combine_streams() -> None:
    t, s = new()
    words = s.each(["line"], str.split, ["word"])
    counts = words.group_by(["word"]).persistent_aggregate(StateFactory("counts", "transactional"), Count(), ["count"])
    asks = words.filter(lambda line, w: w.startswith("q")).each(["word"], lambda w: [w[1:]], ["asked"])
    asks.state_query(counts, out_fields=["count"], key_fields=["asked"]).project(["asked", "count"])
    both = t.merge(words.project(["word"]), asks.project(["asked"]))
    both.group_by(["word"]).persistent_aggregate(StateFactory("merged", "transactional"), Count(), ["n"])
    lengths = words.each(["word"], lambda w: [len(w)], ["len"]).project(["word", "len"])
    firsts = words.each(["word"], lambda w: [w[0]], ["first"]).project(["word", "first"])
    t.join(lengths, ["word"], firsts, ["word"], ["word", "len", "first"]).group_by(["first"]).persistent_aggregate(
        StateFactory("letters", "transactional"), Sum(), ["total"], input_fields=["len"]
    )
    topo = t.build("q")
    result = run_topology(topo, {"lines": ["ant ant bee", "qant qzz"]}, config={"squall.batch.records": 1})
    assert result.outputs["q.counts"] == {"ant": 2, "bee": 1, "qant": 1, "qzz": 1}
    answers = {v[2]: v[3] for v in emitted(result, "state_query")}  # (line, word, asked, count)
    assert set(answers) == {"ant", "zz"} and answers["zz"] is None and answers["ant"] in (None, 2)  # the last committed count, if any
    assert result.outputs["q.merged"] == {"ant": 3, "bee": 1, "qant": 1, "qzz": 1, "zz": 1}  # the words and the asked ones
    # the join pairs each word with itself within its batch: "ant" twice a side gives 4 rows of length 3
    assert result.outputs["q.letters"] == {"a": 4 * 3, "b": 3, "q": 4 + 3}
