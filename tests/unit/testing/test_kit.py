"""The test kit (streams.testing, issue 27): the examples' outputs, faults, simulated time, determinism."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from examples import exclamation, rolling_top_words, wordcount, wordcount_stateful
from streams import BasicBolt, BasicOutputCollector, Duration, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple, TupleWindow, WindowedBolt
from streams.kafka.source import KafkaMessageId
from streams.testing import Faults, KitError, LocalTopology, NotSettledError, SimulatedTime, run_topology

WORD = re.compile(r"[a-z']+")
LINES = ["The cat sat", "on the mat", "a dog", "the end", "red fish blue fish", "one more line", "and the last"]
ONE_RECORD_TREES = {"squall.spout.tree.records": 1}
"""One record per tree: a fault on one line replays that line alone (the default packs several)."""


def direct(lines: list[str]) -> dict[str, int]:
    return dict(Counter(w for line in lines for w in WORD.findall(line.lower())))


def test_the_word_count_example_counts_every_word_and_acks_every_line() -> None:
    result = run_topology(wordcount.topology(), {"lines": LINES})
    assert result.output() == direct(LINES)
    assert result.final_outcomes("lines") == Counter({"acked": len(LINES)})
    assert sorted(v[0] for v in result.values("split")) == sorted(w for line in LINES for w in WORD.findall(line.lower()))
    assert not result.dead_letters and not result.errors


def test_the_stateful_word_count_writes_its_state_output() -> None:
    result = run_topology(wordcount_stateful.topology(), {"lines": LINES})
    assert result.output() == direct(LINES)
    assert result.final_outcomes("lines") == Counter({"acked": len(LINES)})


def test_rolling_top_words_equals_its_direct_window_computation() -> None:
    lines = [f"{w} {w} alpha beta" for w in ("gamma", "delta", "eps") for _ in range(300)]
    result = run_topology(rolling_top_words.topology(), {"lines": lines})
    assert result.output() == rolling_top_words.direct_windows(lines)


def test_a_kafka_bolt_writes_to_its_sink_topic_and_acks_on_delivery() -> None:
    result = run_topology(exclamation.topology(), {"lines": ["hello", "world"]})
    ((topic, records),) = result.sinks.items()
    assert topic == "squall.exclamation.exclaimed"
    assert sorted(r.value() for r in records) == [b"hello!!!!!!", b"world!!!!!!"]
    assert result.final_outcomes("lines") == Counter({"acked": 2})


def test_emits_name_their_anchors_and_the_input_records_of_their_trees() -> None:
    result = run_topology(wordcount.topology(), {"lines": ["a b"]})
    (line,) = result.inputs["lines"]
    words = result.emitted[("split", "default")]
    assert [(e.values, e.anchors, e.message_ids) for e in words] == [(("a",), (("a b",),), (line,)), (("b",), (("a b",),), (line,))]


def test_a_failed_tuple_is_replayed_and_only_its_line_is_counted_again() -> None:
    faults = Faults().fail("count", where=lambda t: t[0] == "dog")
    result = run_topology(wordcount.topology(), {"lines": LINES}, faults=faults, config=ONE_RECORD_TREES)
    outcomes = result.input_outcomes("lines")
    assert outcomes[LINES.index("a dog")] == ["failed", "acked"]
    assert all(o == ["acked"] for i, o in enumerate(outcomes) if i != LINES.index("a dog"))
    expected = direct(LINES)
    expected["a"] += 1  # the replayed line's other word was counted twice (at least once)
    assert result.output() == expected
    assert result.replays("lines") == 1


def test_a_dropped_ack_times_the_tree_out_after_the_message_timeout_in_simulated_time() -> None:
    clock = SimulatedTime()
    faults = Faults().drop_ack("split", where=lambda t: "dog" in t[0])
    result = run_topology(wordcount.topology(), {"lines": LINES}, faults=faults, time=clock, config={**ONE_RECORD_TREES, "topology.message.timeout.secs": 5})
    assert result.input_outcomes("lines")[LINES.index("a dog")] == ["timed_out", "acked"]
    assert 5.0 <= clock.now < 6.0  # nothing slept: the clock moved to the timeout and no further
    assert result.output()["dog"] == 2


def test_a_delayed_ack_still_completes_the_tree_once_it_arrives() -> None:
    clock = SimulatedTime()
    faults = Faults().delay_ack("split", 3.0, where=lambda t: "cat" in t[0])
    result = run_topology(wordcount.topology(), {"lines": LINES}, faults=faults, time=clock, config=ONE_RECORD_TREES)
    assert result.input_outcomes("lines")[0] == ["acked"]
    assert 3.0 <= clock.now < 3.5
    assert result.output() == direct(LINES)


def test_an_exception_in_execute_fails_the_tuple_and_is_recorded_with_its_component() -> None:
    faults = Faults().raise_in("count", where=lambda t: t[0] == "fish", error=ValueError("bad fish"))
    result = run_topology(wordcount.topology(), {"lines": LINES}, faults=faults, config=ONE_RECORD_TREES)
    (error,) = result.errors
    assert (error.component, error.error_type, error.message, error.values) == ("count", "ValueError", "bad fish", ("fish",))
    assert result.input_outcomes("lines")[LINES.index("red fish blue fish")] == ["failed", "acked"]


def test_error_reports_name_each_cause_as_squall_errors_would_unthrottled() -> None:
    from tests.integration.topologies import erring

    lines = ["the cat sat", "please divide by nothing", "{not json", "reject this one", "the dog"]
    result = run_topology(erring.topology(), {"lines": lines})
    assert result.output() == {"the": 2, "cat": 1, "sat": 1, "dog": 1}
    causes = Counter((r.component, r.cause, r.type) for r in result.reports)
    # squall.spout.max.retries = 2: three deliveries of each bad line.
    assert causes == {("check", "exception", "ZeroDivisionError"): 3, ("check", "fail", "Fail"): 3, ("lines", "poison", "JSONDecodeError"): 1}
    fail = next(r for r in result.reports if r.cause == "fail")
    assert fail.message == "rejected: 'reject this one' names no known user" and fail.where.startswith("squall.erring.check[0]@")
    assert [e.error_type for e in result.errors] == ["ZeroDivisionError"] * 3
    assert sorted(d.value or b"" for d in result.dead_letters) == sorted(line.encode() for line in lines[1:4])


def test_a_crashed_bolt_task_re_executes_from_its_committed_offset_and_nothing_is_lost() -> None:
    lines = [f"{a} {b}" for a in ("ant", "bee", "cow", "doe") for b in ("elk", "fox", "gnu")] * 5
    faults = Faults().crash("split", 0, after=25)
    result = run_topology(wordcount.topology(), {"lines": lines}, faults=faults)
    assert result.crashes == [("split", 0)]
    counts = result.output()
    truth = direct(lines)
    assert counts.keys() == truth.keys() and all(counts[w] >= n for w, n in truth.items())  # at least once
    assert result.final_outcomes("lines") == Counter({"acked": len(lines)})


def test_a_crashed_spout_task_emits_again_from_its_committed_offsets() -> None:
    faults = Faults().crash("lines", 0, after=1)
    result = run_topology(wordcount.topology(), {"lines": LINES}, faults=faults)
    assert result.crashes == [("lines", 0)]
    assert result.output() == direct(LINES)  # its unflushed emits were lost with it, and emitted again
    assert result.final_outcomes("lines") == Counter({"acked": len(LINES)})


def test_a_poison_record_is_dead_lettered_with_where_it_was_read() -> None:
    class Strict(RecordTranslator):
        def translate(self, msg: Any) -> tuple[str, list[Any]] | None:
            if msg.value() == b"poison":
                raise ValueError("not a line")
            return super().translate(msg)

    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=Strict("line")))
    b.set_bolt("split", wordcount.Split()).shuffle_grouping("lines")
    result = run_topology(b.create_topology("poison"), {"lines": ["a b", "poison", "c"]})
    (dl,) = result.dead_letters
    assert (dl.component, dl.topic, dl.partition, dl.offset, dl.value) == ("lines", "squall.poison.lines", 0, 1, b"poison")
    assert "not a line" in dl.reason
    assert result.input_outcomes("lines") == [["acked"], ["dead_lettered"], ["acked"]]


class PerSecond(WindowedBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count", "start"])

    def execute(self, window: TupleWindow) -> None:
        for word, n in Counter(t[0] for t in window.get()).items():
            self.collector.emit([word, n, window.start])


def windowed() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")))
    b.set_bolt("split", wordcount.Split()).shuffle_grouping("lines")
    b.set_bolt("count", PerSecond().with_tumbling_window(Duration(2.0))).fields_grouping("split", ["word"])
    return b.create_topology("windows")


def test_a_processing_time_window_fires_when_simulated_time_passes_its_end() -> None:
    clock = SimulatedTime()
    with LocalTopology(windowed(), time=clock) as local:
        local.feed("lines", ["a b a"])
        local.run()
        assert local.result().values("count") == []  # no time has passed: the window is open
        local.advance(1.0)
        local.feed("lines", ["b"])
        local.advance(1.5)  # t = 2.5 s: the first window [0, 2) has fired
        first = sorted(local.result().values("count"))
        assert first == [("a", 2, clock.start), ("b", 2, clock.start)]
        local.settle()
        assert local.settled()
        assert local.result().final_outcomes("lines") == Counter({"acked": 2})


def test_each_emit_of_a_window_names_that_windows_tuples_and_message_ids() -> None:
    """The kit describes a window's anchors once per window, not once per emit (a 5,000-line
    tumbling count took 44 s in the kit, now 2 s): each emit must still name its own window."""
    clock = SimulatedTime()
    first_lines = [f"{w} x" for w in ("ant", "bee", "cat", "dog", "eel", "fox")]
    second_lines = [f"{w} x" for w in ("gnu", "hen", "ibis", "jay", "kea")]
    with LocalTopology(windowed(), time=clock) as local:
        local.feed("lines", first_lines)
        local.run()
        local.advance(2.5)  # the first window [0, 2) fires: 13 words, anchored to its 12 word tuples
        local.feed("lines", second_lines)
        local.run()
        local.advance(2.0)  # the second window [2, 4) fires
        local.settle()
        emits = local.result().emitted[("count", "default")]
    by_window: dict[float, list[Any]] = {}
    for e in emits:
        by_window.setdefault(e.values[2], []).append(e)
    assert len(by_window) == 2
    for (_, window_emits), lines, offsets in zip(sorted(by_window.items()), (first_lines, second_lines), (range(6), range(6, 11)), strict=True):
        words = sorted((w,) for line in lines for w in line.split())
        assert len(window_emits) == len(lines) + 1  # a count per word, and "x"
        for e in window_emits:
            assert sorted(e.anchors) == words  # this window's tuples, every emit alike
            assert sorted(o for mid in e.message_ids for o in mid.offsets) == list(offsets)  # this window's records' trees


def test_the_same_seed_gives_the_same_run_and_the_global_random_is_left_alone() -> None:
    import random

    random.seed(7)
    expected_next = random.random()
    random.seed(7)
    runs = [run_topology(wordcount.topology(), {"lines": LINES}, seed=3) for _ in range(2)]
    assert random.random() == expected_next
    assert runs[0].emitted == runs[1].emitted
    assert [e.task for e in runs[0].emitted[("count", "counts")]] == [e.task for e in runs[1].emitted[("count", "counts")]]


def test_bad_kit_input_names_the_component() -> None:
    with pytest.raises(KitError, match=r"\[nope\]"):
        run_topology(wordcount.topology(), {"nope": ["x"]})
    with pytest.raises(KitError, match=r"\[ghost\] a fault names"):
        LocalTopology(wordcount.topology(), faults=Faults().fail("ghost"))


def test_a_bolt_that_never_acks_ends_in_not_settled_error_naming_the_spout() -> None:
    class Hoarder(BasicBolt):
        def declare_output_fields(self, declarer: Any) -> None:
            pass

        def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
            pass

    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")))
    b.set_bolt("hold", Hoarder()).shuffle_grouping("lines")
    faults = Faults().drop_ack("hold", times=1000)
    with pytest.raises(NotSettledError, match=r"trees in flight \{'lines': 1\}"):
        run_topology(b.create_topology("stuck"), {"lines": ["x"]}, faults=faults, max_s=3.0, config={"topology.message.timeout.secs": 10})


def word_is(word: str) -> Callable[[Tuple], bool]:
    return lambda t: bool(t[0] == word)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(alphabet="abc ", max_size=12), min_size=1, max_size=15), st.sets(st.sampled_from("abc"), max_size=2))
def test_property_every_line_is_acked_and_counted_at_least_once_whatever_fails(lines: list[str], failing: set[str]) -> None:
    faults = Faults()
    for w in failing:
        faults.fail("count", where=word_is(w), times=2)
    result = run_topology(wordcount.topology(), {"lines": lines}, faults=faults)
    assert result.final_outcomes("lines") == Counter({"acked": len(lines)})
    counts, truth = result.output(), direct(lines)
    assert counts.keys() == truth.keys() and all(counts[w] >= n for w, n in truth.items())
    if not failing:
        assert counts == truth and result.replays("lines") == 0


def test_message_ids_of_fed_records_follow_the_input_partitions() -> None:
    result = run_topology(wordcount.topology(), {"lines": ["a", "b", "c"]})
    assert result.inputs["lines"] == [KafkaMessageId("squall.wordcount.lines", p, o) for p, o in ((0, 0), (1, 0), (0, 1))]


def test_the_exactly_once_word_count_is_exact_when_batches_fail_and_a_task_crashes() -> None:
    from examples import wordcount_exactly_once

    lines = [f"{a} {b} the" for a in ("ant", "bee", "cow") for b in ("elk", "fox")] * 40
    faults = Faults().fail("count", where=lambda t: t[0] == "the", times=3).crash("split", 1, after=60)
    result = run_topology(wordcount_exactly_once.topology(), {"lines": lines}, faults=faults, config={"squall.batch.records": 25})
    assert result.output() == direct(lines)  # exact: replayed batches were not applied twice
    assert result.crashes == [("split", 1)]
    trees = result.trees["lines"]
    failed = [mid for mid, outs in trees.items() if mid[0] == "batch" and outs == ["failed"]]
    assert failed, "a batch failed"
    for _, txid, attempt in failed:  # each failed batch was replayed under the same txid, and committed
        assert any(m[:2] == ("commit", txid) and m[2] > attempt and o == ["acked"] for m, o in trees.items())
    commits = [mid[1] for mid, outs in trees.items() if mid[0] == "commit" and outs[-1] == "acked"]
    assert commits == sorted(commits) and len(commits) == len(set(commits))  # strictly in txid order


def test_a_transactional_spout_takes_input_and_a_plain_spout_does_not() -> None:
    from examples import wordcount_exactly_once

    local = LocalTopology(wordcount_exactly_once.topology())
    local.feed("lines", ["a"])
    local.settle()
    assert local.result().inputs["lines"] == [KafkaMessageId("squall.wordcount_eo.lines", 0, 0)]
    local.close()

    class Counter3(BasicBolt):
        def declare_output_fields(self, declarer: Any) -> None:
            pass

        def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
            pass

    from streams import Spout

    class Numbers(Spout):
        def declare_output_fields(self, declarer: Any) -> None:
            declarer.declare(["n"])

        def next_tuple(self) -> None:
            pass

    b = TopologyBuilder()
    b.set_spout("numbers", Numbers())
    b.set_bolt("c", Counter3()).shuffle_grouping("numbers")
    with pytest.raises(KitError, match=r"\[numbers\] reads no Kafka topic \(Numbers\)"):
        run_topology(b.create_topology("plain"), {"numbers": ["1"]})


def test_components_that_need_a_real_kafka_are_refused_by_name() -> None:
    from examples import wordcount_exactly_once_sink, wordcount_spark

    with pytest.raises(KitError, match=r"\[split\] does not run in the test kit: a SparkBolt's Spark Structured Streaming query"):
        LocalTopology(wordcount_spark.topology())
    with pytest.raises(KitError, match=r"\[out\] does not run in the test kit: a KafkaSink writes each batch in a Kafka transaction"):
        LocalTopology(wordcount_exactly_once_sink.topology())


def test_every_grouping_follows_its_rule_in_the_kit() -> None:
    from tests.integration.topologies import groupings

    n = 200
    result = run_topology(groupings.topology(), {"src": [f"k{i % 10},{i}" for i in range(n)]})
    seen: dict[str, list[tuple[int, str, int]]] = {}
    for e in result.emitted.items():
        (component, stream), emits = e
        if stream == "seen":
            seen[component] = [(em.values[1], em.values[2], em.values[3]) for em in emits]
    base = {g: groupings.topology().components[g].task_base for g in groupings.GROUPINGS}
    assert len(seen["all"]) == groupings.TASKS * n and len(seen["shuffle"]) == n
    assert len({task for task, _, _ in seen["shuffle"]}) == groupings.TASKS  # spread over every task
    by_key: dict[str, set[int]] = {}
    for task, key, _ in seen["fields"]:
        by_key.setdefault(key, set()).add(task)
    assert all(len(tasks) == 1 for tasks in by_key.values())  # a key always reaches the same task
    assert len({task for task, _, _ in seen["global"]}) == 1 and {task for task, _, _ in seen["global"]} == {base["global"]}
    assert all(task == base["direct"] + num % groupings.TASKS for task, _, num in seen["direct"])
    assert all(task == base["custom"] + num % 2 for task, _, num in seen["custom"])
