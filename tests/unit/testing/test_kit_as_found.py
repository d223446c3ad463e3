"""What a new user found in the test kit (issue 47): each defect, asserted."""

from __future__ import annotations

from collections import Counter

from examples import wordcount, wordcount_stateful
from streams import KafkaSpout, RecordTranslator, RetryPolicy, TopologyBuilder
from streams.testing import Faults, LocalTopology, SimulatedTime


def test_a_dead_lettered_tree_ends_dead_lettered_after_the_failures_that_caused_it() -> None:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line"), retry=RetryPolicy(max_retries=2)))
    b.set_bolt("split", wordcount.Split()).shuffle_grouping("lines")
    faults = Faults().fail("split", lambda t: t[0] == "bad", times=100)
    with LocalTopology(b.create_topology("dlq_order"), faults=faults, config={"squall.spout.tree.records": 1}) as local:  # a tree per line
        local.feed("lines", ["good", "bad"])
        local.settle()
        result = local.result()
    assert result.input_outcomes("lines") == [["acked"], ["failed", "failed", "failed", "dead_lettered"]]
    assert result.final_outcomes("lines") == Counter({"acked": 1, "dead_lettered": 1})
    (dl,) = result.dead_letters
    assert (dl.component, dl.offset, dl.attempts, dl.value) == ("lines", 1, 3, b"bad")
    assert result.replays("lines") == 2


def test_the_state_output_is_there_after_settle_without_close() -> None:
    lines = ["the cat", "the dog"]
    local = LocalTopology(wordcount_stateful.topology())
    try:
        local.feed("lines", lines)
        local.settle()
        local.advance(2 * local.top_conf.state_checkpoint_interval_ms / 1000)  # the next checkpoint saves every acked tree's updates
        assert local.result().output() == {"the": 2, "cat": 1, "dog": 1}
    finally:
        local.close()
    assert local.result().output() == {"the": 2, "cat": 1, "dog": 1}


def test_simulated_time_adds_up_exactly() -> None:
    time = SimulatedTime()
    with LocalTopology(wordcount.topology(), time=time) as local:
        for _ in range(4):
            local.advance(6.0)
        assert time.now == 24.0
        assert time.ns == 24_000_000_000
        local.advance(0.3)
        assert time.now == 24.3


def test_simulated_time_refuses_to_go_back() -> None:
    import pytest

    with LocalTopology(wordcount.topology()) as local, pytest.raises(ValueError, match="cannot go back"):
        local.advance(-1.0)


def test_no_output_says_why_instead_of_asking_for_a_name() -> None:
    import pytest

    from streams.testing import RunResult

    with pytest.raises(KeyError, match="no output yet"):
        RunResult().output()


def test_replays_count_the_trees_a_spout_crash_lost_in_flight() -> None:
    faults = Faults().crash("lines", 0, after=1)  # the spout task dies after its first emit, that tree in flight
    with LocalTopology(wordcount.topology(), faults=faults, config={"squall.spout.tree.records": 1}) as local:
        local.feed("lines", ["a b", "c d", "e f"])
        local.settle()
        result = local.result()
    assert result.crashes == [("lines", 0)]
    assert result.output() == {w: 1 for w in "abcdef"}
    assert sorted(map(tuple, result.input_outcomes("lines"))) == [("acked",), ("acked",), ("restarted", "acked")]
    assert len(result.values("lines")) == 4  # the lost tree's line, emitted again
    assert result.replays("lines") == 1
    assert result.final_outcomes("lines") == Counter({"acked": 3})
