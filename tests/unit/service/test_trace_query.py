"""squall trace without a broker: the timed-out trees summed by the component that held them, and --held-by."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import service.query.trace as trace_query
from service.cli.main import app
from service.query.trace import held_summary, timed_out, tree_lines
from streams.monitoring.trace import TraceEvent


def tree(root: int, start: float, holder: str | None) -> list[TraceEvent]:
    """lines -> split -> count; ``holder`` (split or count) never acks its edge and the tree times out; None: it completes."""

    def ev(event: str, component: str, at: float, edge: int = 0, target: str = "") -> TraceEvent:
        return TraceEvent(root, event, component, 0, "w0", start + at, edge, target)

    events = [
        ev("emit", "lines", 0.0, 11, "split"),
        ev("receive", "split", 0.1, 11),
        ev("emit", "split", 0.2, 22, "count"),
        ev("receive", "count", 0.3, 22),
    ]
    if holder != "split":
        events.append(ev("ack", "split", 0.2, 11))
    if holder != "count":
        events.append(ev("ack", "count", 0.4, 22))
    events.append(ev("timeout", "__acker", 30.0) if holder else ev("complete", "__acker", 0.5))
    return events


TREES = {1: tree(1, 0.0, "count"), 2: tree(2, 1.0, None), 3: tree(3, 2.0, "split"), 4: tree(4, 3.0, "count")}


def test_the_summary_counts_the_timed_out_trees_per_holder_most_first() -> None:
    roots = timed_out(TREES)
    assert roots == [1, 3, 4] and timed_out(TREES, "count") == [1, 4] and timed_out(TREES, "lines") == []
    assert held_summary(TREES, roots) == ["held by [count] 2 of 3 timed-out trees", "held by [split] 1 of 3 timed-out trees"]
    assert tree_lines(3, TREES[3])[0] == "tree 0000000000000003: timed out, 6 events, held by [split]"
    assert tree_lines(2, TREES[2])[0] == "tree 0000000000000002: complete, 7 events"


def test_the_verb_prints_the_summary_first_and_held_by_keeps_that_components_trees(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_query, "read_trees", lambda bootstrap, name: TREES)
    runner = CliRunner()
    out = runner.invoke(app, ["trace", "wc", "--timed-out", "--bootstrap-servers", "127.0.0.1:1"]).output.splitlines()
    assert out[:2] == ["held by [count] 2 of 3 timed-out trees", "held by [split] 1 of 3 timed-out trees"]
    assert [line.split(":")[0] for line in out if line.startswith("tree ")] == ["tree 0000000000000001", "tree 0000000000000003", "tree 0000000000000004"]
    got = runner.invoke(app, ["trace", "wc", "--held-by", "split", "--bootstrap-servers", "127.0.0.1:1"])
    assert got.exit_code == 0, got.output
    assert [line for line in got.output.splitlines() if line.startswith("tree ")] == ["tree 0000000000000003: timed out, 6 events, held by [split]"]
    got = runner.invoke(app, ["trace", "wc", "--held-by", "sink", "--bootstrap-servers", "127.0.0.1:1"])
    assert got.output.splitlines()[-1] == "wc: no sampled tree that timed out was held by [sink]"


def test_an_edge_in_transit_is_summed_under_both_its_ends_and_either_end_finds_it() -> None:
    transit = [e for e in tree(5, 4.0, "count") if not (e.event == "receive" and e.component == "count")]  # count never got it
    trees = {**TREES, 5: transit}
    assert tree_lines(5, transit)[0] == "tree 0000000000000005: timed out, 5 events, held by [split] -> [count] (in transit)"
    assert held_summary(trees, timed_out(trees))[-1] == "held by [split] -> [count] (in transit) 1 of 4 timed-out trees"
    assert timed_out(trees, "split") == [3, 5] and timed_out(trees, "count") == [1, 4, 5]
