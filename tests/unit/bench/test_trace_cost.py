"""``python -m bench trace``: its run order alternates and its summary pairs runs (never a speed check)."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from bench import trace_cost
from bench.__main__ import main
from bench.trace_cost import order, summarise


def row(rps: float, cpu: float, trees: int = 1000, sampled: int = 10) -> dict[str, float]:
    return {"records_per_s": rps, "cpu_us_per_record": cpu, "trees": trees, "sampled_trees": sampled}


def test_docstring_examples_run() -> None:
    result = doctest.testmod(trace_cost)
    assert result.attempted >= 2 and result.failed == 0


def test_each_contender_runs_first_in_half_of_the_pairs() -> None:
    firsts = [order(i)[0] for i in range(6)]
    assert firsts.count("squall-acked") == firsts.count("squall-traced") == 3
    assert all(sorted(order(i)) == ["squall-acked", "squall-traced"] for i in range(6))


def test_a_pair_cost_compares_the_runs_of_that_pair_only() -> None:
    # the machine slowed down between the pairs: each pair is 2% apart, the medians of all runs are not
    s = summarise([{"squall-acked": row(100.0, 50.0), "squall-traced": row(98.0, 51.0)}, {"squall-acked": row(60.0, 80.0), "squall-traced": row(58.8, 81.6)}])
    assert [round(c, 6) for c in s["pair_costs"]] == [0.02, 0.02]
    assert round(s["median_pair_cost"], 6) == 0.02 and s["within_target"]
    assert [round(c, 6) for c in s["pair_cpu_costs"]] == [0.02, 0.02]


def test_a_cost_over_three_percent_is_not_within_the_target() -> None:
    s = summarise([{"squall-acked": row(100.0, 50.0), "squall-traced": row(90.0, 55.0)}])
    assert round(s["median_pair_cost"], 6) == 0.1 and not s["within_target"]


@given(st.lists(st.tuples(st.floats(1, 1e6), st.floats(1, 1e6)), min_size=1, max_size=9))
def test_the_median_cost_lies_between_the_pairs_costs(runs: list[tuple[float, float]]) -> None:
    pairs = [{"squall-acked": row(a, 10.0), "squall-traced": row(t, 10.0, sampled=7)} for a, t in runs]
    s = summarise(pairs)
    assert min(s["pair_costs"]) <= s["median_pair_cost"] <= max(s["pair_costs"])
    assert s["median_sample_share"] == 0.007
    assert s["within_target"] == (s["median_pair_cost"] <= 0.03)


def test_the_trace_cpu_bench_completes_every_tree_of_both_variants_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "trace-cpu.json"
    main(["trace-cpu", "--lines", "1200", "--chunk", "400", "--json", str(out)])  # (each chunk asserts every tree completed)
    from bench.trace_cpu import TREE

    result = json.loads(out.read_text())
    trees = 3 * -(-400 // TREE)  # each chunk of 400 lines in trees of TREE (squall.spout.tree.records' default)
    assert result["lines"] == 1200 and result["trees"] == trees
    assert result["untraced_cpu_s"] > 0 and result["traced_cpu_s"] > 0
    assert result["events"] >= 0 and result["sampled_trees"] <= result["trees"]
    assert result["sample_share"] == result["sampled_trees"] / trees


def test_a_traced_pipeline_publishes_every_event_of_its_sampled_trees() -> None:
    from bench.common import ROOT
    from bench.trace_cpu import Pipeline
    from streams.model.loader import load_topology

    pipeline = Pipeline(load_topology(ROOT / "examples" / "wordcount.py", "trace-cpu-test"), traced=True)
    assert pipeline.lines_ex.tracer is not None
    pipeline.lines_ex.tracer.limit = pipeline.split.tracer.limit = pipeline.count.tracer.limit = pipeline.acker.tracer.limit = 1 << 32  # type: ignore[union-attr]  # every tree
    pipeline.feed(["to be or not to be", "that is the question"])
    sample = pipeline.sampled()
    # one tree: the spout's 2 emits; split: 2 receives, 10 emits, 2 acks, 2 executes; count: 10 receives, executes and acks
    # (acked on the end-of-chunk tick); the acker: an init, an ack op from split and one from count, and the complete
    assert sample == {"sampled_trees": 1, "events": 2 + 16 + 30 + 4}
