"""Task hooks (Storm's ITaskHook, issue 47): what each hook point sees, auto hooks from config, and a held ack."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from examples import wordcount
from streams import (
    BasicBolt,
    BasicOutputCollector,
    BoltAckInfo,
    BoltExecuteInfo,
    BoltFailInfo,
    EmitInfo,
    FailedException,
    KafkaSpout,
    RecordTranslator,
    SpoutAckInfo,
    SpoutFailInfo,
    TaskHook,
    TopologyBuilder,
    TopologyError,
    Tuple,
)
from streams.testing import LocalTopology, run_topology

ONE_RECORD_TREES = {"squall.spout.tree.records": 1}


class Recorder(TaskHook):
    """Records every hook call, by component (class-level: auto hooks are instantiated by the runtime)."""

    calls: list[tuple[str, str, Any]] = []
    prepared: list[tuple[str, int]] = []

    def __init__(self) -> None:
        self.component = "?"

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.component = context.this_component_id
        Recorder.prepared.append((self.component, context.this_task_id))

    def emit(self, info: EmitInfo) -> None:
        Recorder.calls.append((self.component, "emit", info))

    def spout_ack(self, info: SpoutAckInfo) -> None:
        Recorder.calls.append((self.component, "spout_ack", info))

    def spout_fail(self, info: SpoutFailInfo) -> None:
        Recorder.calls.append((self.component, "spout_fail", info))

    def bolt_execute(self, info: BoltExecuteInfo) -> None:
        Recorder.calls.append((self.component, "bolt_execute", info))

    def bolt_ack(self, info: BoltAckInfo) -> None:
        Recorder.calls.append((self.component, "bolt_ack", info))

    def bolt_fail(self, info: BoltFailInfo) -> None:
        Recorder.calls.append((self.component, "bolt_fail", info))


class Picky(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        if tuple[0] == "bad":
            raise FailedException("no bad lines")
        for w in tuple[0].split():
            collector.emit([w])


def topology(conf: dict[str, Any] | None = None) -> Any:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")))
    b.set_bolt("split", Picky(), 2).shuffle_grouping("lines")
    return b.create_topology("hooks", conf or {})


@pytest.fixture(autouse=True)
def _fresh() -> None:
    Recorder.calls.clear()
    Recorder.prepared.clear()


def test_auto_hooks_see_every_emit_execute_ack_and_fail_with_storm_s_fields() -> None:
    conf = {"topology.auto.task.hooks": ["tests.unit.runtime.test_task_hooks:Recorder"], **ONE_RECORD_TREES, "squall.spout.max.retries": 0}
    result = run_topology(topology(conf), {"lines": ["a b", "bad"]})
    assert sorted(Recorder.prepared) == [("lines", 0), ("split", 1), ("split", 2)]  # one instance per task
    kinds = Counter((c, k) for c, k, _ in Recorder.calls)
    assert kinds[("lines", "emit")] == 2 and kinds[("split", "emit")] == 2
    assert kinds[("split", "bolt_execute")] == 2 and kinds[("split", "bolt_ack")] == 1 and kinds[("split", "bolt_fail")] == 1
    assert kinds[("lines", "spout_ack")] == 1 and kinds[("lines", "spout_fail")] == 1
    by = {k: [i for c, kk, i in Recorder.calls if kk == k] for _, k, _ in Recorder.calls}
    spout_emits = [i for c, k, i in Recorder.calls if (c, k) == ("lines", "emit")]
    assert sorted(e.values[0] for e in spout_emits) == ["a b", "bad"] and all(e.message_id is not None and len(e.out_tasks) == 1 for e in spout_emits)
    words = [i for c, k, i in Recorder.calls if (c, k) == ("split", "emit")]
    assert [w.values for w in words] == [["a"], ["b"]]
    assert all(w.anchors and w.anchors[0].values == ["a b"] for w in words)  # anchored to its input
    (fail,) = by["bolt_fail"]
    assert fail.tuple.values == ["bad"] and "no bad lines" in fail.why
    (ack,) = by["spout_ack"]
    assert ack.complete_latency_s >= 0 and ack.spout_task_id == 0
    (failed,) = by["spout_fail"]
    assert not failed.timed_out
    assert all(i.execute_latency_s >= 0 and i.error is None for i in by["bolt_execute"])
    assert result.final_outcomes("lines") == Counter({"acked": 1, "dead_lettered": 1})


def test_a_hook_added_in_prepare_sees_the_exception_execute_raised() -> None:
    seen: list[BoltExecuteInfo] = []

    class Watch(TaskHook):
        def bolt_execute(self, info: BoltExecuteInfo) -> None:
            seen.append(info)

    class Boom(BasicBolt):
        def prepare(self, conf: dict[str, Any], context: Any) -> None:
            context.add_task_hook(Watch())

        def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
            raise ZeroDivisionError("division by zero")

    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")))
    b.set_bolt("boom", Boom()).shuffle_grouping("lines")
    with LocalTopology(b.create_topology("boom", {"squall.spout.max.retries": 0})) as local:
        local.feed("lines", ["x"])
        local.settle()
    assert [type(i.error).__name__ for i in seen] == ["ZeroDivisionError"]


def test_a_held_ack_times_the_tree_out_and_a_released_one_acks_it() -> None:
    held: list[Any] = []

    class HoldFirst(TaskHook):
        def bolt_ack(self, info: BoltAckInfo) -> None:
            if info.tuple.values == ["hold me"] and not held:
                held.append(info.hold())

    class Pass(BasicBolt):
        def prepare(self, conf: dict[str, Any], context: Any) -> None:
            context.add_task_hook(HoldFirst())

        def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
            pass

    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")))
    b.set_bolt("pass", Pass()).shuffle_grouping("lines")
    conf = {**ONE_RECORD_TREES, "topology.message.timeout.secs": 5}
    with LocalTopology(b.create_topology("held", conf)) as local:
        local.feed("lines", ["hold me", "go"])
        local.advance(1.0)
        assert local.result().input_outcomes("lines") == [[], ["acked"]]
        held[0]()  # released late: the ack reaches the acker
        local.advance(0.5)
        assert local.result().input_outcomes("lines") == [["acked"], ["acked"]]


def test_a_bad_auto_hook_entry_names_the_component_and_the_entry() -> None:
    with pytest.raises(TopologyError, match=r"\[lines\] topology.auto.task.hooks entry 'no_such_module:Hook'"):
        run_topology(topology({"topology.auto.task.hooks": ["no_such_module:Hook"]}), {"lines": ["a"]})
    with pytest.raises(TopologyError, match=r"is not a streams\.TaskHook subclass"):
        run_topology(topology({"topology.auto.task.hooks": ["collections:Counter"]}), {"lines": ["a"]})


def test_the_word_count_is_unchanged_with_a_hook_on_every_task() -> None:
    plain = run_topology(wordcount.topology(), {"lines": ["the cat", "the dog"]})
    conf = {"topology.auto.task.hooks": ["tests.unit.runtime.test_task_hooks:Recorder"]}
    hooked = run_topology(wordcount.topology(), {"lines": ["the cat", "the dog"]}, config=conf)
    assert hooked.output() == plain.output() == {"the": 2, "cat": 1, "dog": 1}
    assert {c for c, _ in Recorder.prepared} == {"lines", "split", "count"}
