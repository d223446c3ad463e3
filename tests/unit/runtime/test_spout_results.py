"""The spout side of tracking: trees in flight, outcomes, timeouts (pure; injected clock)."""

from __future__ import annotations

from streams import KafkaSpout, TopologyBuilder, TopologyContext
from streams.kafka.source import KafkaMessageId, KafkaSource, kafka_source
from streams.runtime.inflight import InFlightTrees


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_second_completion_for_a_finished_root_is_ignored_and_counted() -> None:
    trees = InFlightTrees(Clock())
    trees.track(11, 0, KafkaMessageId("t", 0, 5))
    trees.track(12, 0, KafkaMessageId("t", 0, 6))
    assert trees.pending(0) == 2
    first = [trees.settle(11), trees.settle(12)]
    again = [trees.settle(11), trees.settle(12)]  # duplicates after a crash
    assert [t.msg_id for t in first if t is not None] == [("t", 0, 5), ("t", 0, 6)]
    assert again == [None, None] and trees.ignored == 2
    assert trees.pending(0) == 0 and len(trees) == 0


def test_spout_side_timeout_fails_old_trees_in_emit_order() -> None:
    clock = Clock()
    trees = InFlightTrees(clock)
    trees.track(1, 0, "a")
    clock.now = 110.0
    trees.track(2, 1, "b")
    clock.now = 130.5  # timeout 30 s: only "a" is past it
    assert [t.msg_id for t in trees.expired(30.0)] == ["a"]
    assert trees.pending(0) == 0 and trees.pending(1) == 1
    clock.now = 140.0
    assert [t.msg_id for t in trees.expired(30.0)] == ["b"] and len(trees) == 0


def test_kafka_spout_implements_the_source_protocol_and_a_plain_spout_does_not() -> None:
    from examples.wordcount import Split

    assert isinstance(KafkaSpout(), KafkaSource) and kafka_source(KafkaSpout()) is not None
    assert kafka_source(Split()) is None


def test_message_id_has_named_fields_and_equals_its_tuple() -> None:
    mid = KafkaMessageId("lines", 2, 40)
    assert (mid.topic, mid.partition, mid.offset, mid.tp) == ("lines", 2, 40, ("lines", 2))
    assert mid == ("lines", 2, 40) and hash(mid) == hash(("lines", 2, 40))


def test_topology_context_task_layout() -> None:
    b = TopologyBuilder()
    b.set_spout("s", KafkaSpout(), 2)
    from examples.wordcount import Split

    b.set_bolt("split", Split(), 2, num_tasks=3).shuffle_grouping("s")
    t = b.create_topology("t")
    ctx = TopologyContext(t, "split", 3)
    assert ctx.this_task_id == 3 and ctx.this_task_index == 1
    assert ctx.component_tasks("split") == [2, 3, 4] and ctx.component_tasks("s") == [0, 1]
    assert ctx.component_id(4) == "split" and ctx.component_id(0) == "s"
    assert ctx.output_fields() == ("word",)


def test_a_reset_restarts_the_spouts_own_timeout_and_keeps_timeout_order() -> None:
    """collector.reset_timeout reached the acker but not the spout, whose own timeout still failed the tree (issue 25)."""
    from streams.runtime.inflight import InFlightTrees

    now = [0.0]
    trees = InFlightTrees(lambda: now[0])
    trees.track(root=1, task_id=0, msg_id="a")
    now[0] = 1.0
    trees.track(root=2, task_id=0, msg_id="b")
    now[0] = 25.0
    assert trees.reset(1) and not trees.reset(99)
    now[0] = 31.0
    assert [t.msg_id for t in trees.expired(30.0)] == ["b"]  # a was reset at 25
    assert trees.oldest_age() == 6.0
    now[0] = 55.0
    assert [(t.msg_id, t.emitted_at) for t in trees.expired(30.0)] == [("a", 0.0)]  # the emit time stays (complete latency)


def test_the_acker_forwards_a_reset_to_the_trees_spout_task() -> None:
    from acker.common import record_resets
    from acker.durable import DurableLedger
    from acker.ledger import Ledger
    from streams.wire.acker import OP_INIT, OP_RESET, RESULT_RESET, decode_results, encode_results

    dl = DurableLedger(Ledger(30.0))
    dl.apply(0, [[OP_INIT, 7, 5, 3], [OP_RESET, 7], [OP_RESET, 8]])  # root 8: unknown, nobody to tell
    results: dict[int, list[list[object]]] = {}
    record_resets(dl.take_resets(), results)
    assert results == {3: [[RESULT_RESET, 7, 0.0]]} and dl.take_resets() == []
    raw = encode_results(results[3])
    assert decode_results(raw, component="s", topic="r", partition=3, offset=0) == [(RESULT_RESET, 7, 0.0, "")]


def test_an_emit_round_that_stops_at_the_pending_bound_is_marked_held_and_one_below_it_is_not() -> None:
    from typing import Any

    from streams.monitoring.spout_ledger import TaskLedger
    from streams.monitoring.stats import ExecutorStats
    from streams.runtime.pending_bound import FixedBound
    from streams.runtime.spout_tasks import SpoutTask, SpoutTasks

    core = SpoutTasks(InFlightTrees(Clock()), FixedBound(3), ExecutorStats("t", "s", "spout", "w0"))
    track = core.tracker(0, TaskLedger("s", 0))

    class Collector:
        emitted = 0
        hooks: list[Any] = []

    class Emitter:
        """Emits one tracked tuple per call while it has input."""

        def __init__(self, collector: Collector, left: int) -> None:
            self.collector, self.left = collector, left

        def next_tuple(self) -> None:
            if self.left:
                self.left -= 1
                self.collector.emitted += 1
                track(1000 + self.collector.emitted, ("t", 0, self.collector.emitted), 1)

        def ack(self, msg_id: Any) -> None:
            pass

    collector = Collector()
    spout: Any = Emitter(collector, left=2)
    core.by_task[0] = SpoutTask(0, spout, collector, TaskLedger("s", 0))  # type: ignore[arg-type]
    assert core.emit(lambda: None) == 2 and not core.held  # input ran out below the bound of 3
    spout.left = 5
    assert core.emit(lambda: None) == 1 and core.held  # the third tree reached the bound: held back
    core.settle([(0, 1001, 0.1, "")])  # one tree acked: room for one more
    assert core.emit(lambda: None) == 1 and core.held
