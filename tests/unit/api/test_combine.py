"""The map-side combine (compiler rule 4): a processor bolt sends one partial per key and tick to a running aggregate.

The results equal the uncombined topology's and a direct computation; a tuple whose chain
raises folds nothing; a failed partial replays exactly the tuples folded into it.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streams import Count, KafkaSpout, RecordTranslator
from streams.api import Mean, StreamBuilder, TumblingWindows
from streams.api.bolts import AggregateBolt, CombiningBolt, ProcessorBolt
from streams.model.spec import Topology
from streams.testing import Faults, LocalTopology, run_topology

WORDS = st.sampled_from(["the", "cat", "sat", "on", "a", "mat", "it's"])
LINES = st.lists(st.lists(WORDS, max_size=6).map(" ".join), min_size=1, max_size=25)


def inner(topology: Topology, cid: str) -> object:
    obj = topology.components[cid].obj
    return getattr(obj, "inner", obj)


def word_count(combine: bool) -> Topology:
    b = StreamBuilder(combine=combine)
    lines = b.new_stream(KafkaSpout(translator=RecordTranslator("line")), name="lines")
    lines.flat_map(str.split).map_to_pair(lambda w: (w, 1)).repartition(2).count_by_key().set_output("squall.{topology}.counts")
    return b.build("wc")


def several(combine: bool) -> Topology:
    """A mean, a max and a list by key, and a global count: one combining bolt with four ports."""
    b = StreamBuilder(combine=combine)
    words = b.new_stream(KafkaSpout(translator=RecordTranslator("line")), name="lines").flat_map(str.split)
    by_letter = words.map_to_pair(lambda w: (w[0], len(w)))
    by_letter.aggregate_by_key(Mean()).set_output("squall.{topology}.mean")
    by_letter.reduce_by_key(max).set_output("squall.{topology}.max")
    by_letter.group_by_key().map_values(sorted).set_output("squall.{topology}.lengths")
    words.map(len).aggregate(Mean()).key_by(lambda _: "all").set_output("squall.{topology}.all")
    return b.build("several")


def test_a_processor_bolt_before_a_running_aggregate_combines_and_the_aggregate_merges() -> None:
    t = word_count(True)
    assert isinstance(inner(t, "flat_map1"), CombiningBolt)
    count = inner(t, "count_by_key2")
    assert isinstance(count, AggregateBolt) and count.combined
    plain = word_count(False)
    assert isinstance(inner(plain, "flat_map1"), ProcessorBolt)
    plain_count = inner(plain, "count_by_key2")
    assert isinstance(plain_count, AggregateBolt) and not plain_count.combined


@settings(max_examples=30, deadline=None)
@given(LINES, st.integers(1, 5))
def test_combined_counts_equal_the_uncombined_and_a_direct_count_over_many_ticks(lines: list[str], per_tick: int) -> None:
    expected = Counter(w for line in lines for w in line.split())
    outputs = []
    for combine in (True, False):
        with LocalTopology(word_count(combine)) as local:
            for i in range(0, len(lines), per_tick):  # a few lines per tick: partials of several ticks merge
                local.feed("lines", lines[i : i + per_tick])
                local.run()
                local.advance(0.1)
            local.settle()
        result = local.result()
        assert result.final_outcomes("lines") == {"acked": len(lines)}
        outputs.append(result.output())
    assert outputs[0] == outputs[1] == dict(expected)


@settings(max_examples=25, deadline=None)
@given(LINES)
def test_every_aggregator_gives_the_same_result_combined(lines: list[str]) -> None:
    words = [w for line in lines for w in line.split()]
    results = [run_topology(several(c), {"lines": lines}) for c in (True, False)]
    for topic in ("mean", "max", "lengths", "all"):
        combined, plain = (r.output(f"squall.several.{topic}") for r in results)
        assert combined == plain, topic
    out = results[0]
    if words:
        assert out.output("squall.several.all") == {"all": statistics.fmean(len(w) for w in words)}
        assert out.output("squall.several.max") == {k: max(len(w) for w in words if w[0] == k) for k in {w[0] for w in words}}
        assert out.output("squall.several.lengths") == {k: sorted(len(w) for w in words if w[0] == k) for k in {w[0] for w in words}}


def test_a_tuple_whose_chain_raises_folds_nothing_and_its_replay_counts_once() -> None:
    raised: list[str] = []

    def split_once_badly(line: str) -> Any:
        for i, w in enumerate(line.split()):
            if line == "the cat sat" and i == 2 and not raised:
                raised.append(line)
                raise ValueError("a flaky tokeniser")
            yield w

    b = StreamBuilder()
    b.new_stream(KafkaSpout(translator=RecordTranslator("line")), name="lines").flat_map(split_once_badly).map_to_pair(
        lambda w: (w, 1)
    ).count_by_key().set_output("squall.{topology}.counts")
    result = run_topology(b.build("flaky"), {"lines": ["the cat sat", "the end"]})
    assert raised == ["the cat sat"]
    assert result.final_outcomes("lines") == {"acked": 2}
    # the spout replays from the failed record on: every line it emitted ran through the chain,
    # and all but the first (which raised) folded its words; "the" and "cat" reached the port
    # before the raise, staged and then dropped, so they count once per successful run
    runs = [e.values[0] for e in result.emitted[("lines", "default")]]
    assert runs[0] == "the cat sat" and runs.count("the cat sat") == 2
    assert result.output() == dict(Counter(w for line in runs[1:] for w in line.split()))
    assert result.output()["cat"] == 1


def test_a_failed_partial_fails_the_trees_folded_into_it_and_they_replay() -> None:
    lines = ["the cat sat", "the end", "a mat"]
    faults = Faults().fail("count_by_key2", where=lambda t: t[0] == "sat")
    result = run_topology(word_count(True), {"lines": lines}, faults=faults)
    assert result.final_outcomes("lines") == {"acked": 3}
    assert result.input_outcomes("lines")[0] == ["failed", "acked"]  # the line folded into the failed "sat" partial
    direct = Counter(w for line in lines for w in line.split())
    counts = result.output()
    assert counts["sat"] == 1  # counted once: by its replay
    assert all(counts[w] >= n for w, n in direct.items())  # at least once (the spout replays from the failed record on)


def joined_counts(combine: bool) -> Topology:
    """Words of two streams ("L word" and "R word") joined by word in tumbling windows of 4 tuples, then the joined pairs counted per word."""
    b = StreamBuilder(combine=combine)
    records = b.new_stream(KafkaSpout(translator=RecordTranslator("line")), name="records").map(str.split)
    left, right = records.branch(lambda r: r[0] == "L", lambda r: r[0] == "R")
    joined = left.key_by(lambda r: r[1]).window(TumblingWindows.of(Count(4))).join(right.key_by(lambda r: r[1]))
    joined.map_to_pair(lambda p: (p[0], 1)).count_by_key().set_output("squall.{topology}.pairs")
    return b.build("joined")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("LR"), st.sampled_from(["a", "b", "c"])).map(" ".join), min_size=4, max_size=24))
def test_a_join_combines_its_results_per_window_and_the_counts_equal_the_direct_join(records: list[str]) -> None:
    t = joined_counts(True)
    assert isinstance(inner(t, "count_by_key3"), AggregateBolt) and inner(t, "count_by_key3").combined  # type: ignore[attr-defined]
    results = [run_topology(joined_counts(c), {"records": records}) for c in (True, False)]
    combined, plain = results
    assert combined.output() == plain.output()
    assert combined.final_outcomes("records") == plain.final_outcomes("records") == {"acked": len(records)}
    # uncombined, the join sends one (word, 1) per joined pair; combined, one partial per word and window, which sum to the same
    pairs = Counter(e.values[0] for e in plain.emitted.get(("join2", "s3"), []))
    partials = combined.emitted.get(("join2", "s3"), [])
    summed: Counter[str] = Counter()
    for e in partials:
        summed[e.values[0]] += e.values[1]
    assert summed == pairs and {k: v for k, v in combined.output().items() if v} == dict(pairs)
    assert len(partials) <= sum(pairs.values()) and all(e.anchors for e in partials)
