"""The spout executor's handling of ack results (no broker: messages are stand-ins)."""

from __future__ import annotations

from typing import Any

from acker.wire import RESULT_ACK, RESULT_FAIL, encode_results
from streams import KafkaSpout, TopologyBuilder
from streams.config import resolve
from streams.context import TopologyContext
from streams.executor import SpoutExecutor, _SpoutTask


class Msg:
    def __init__(self, value: bytes) -> None:
        self._value = value

    def error(self) -> None:
        return None

    def value(self) -> bytes:
        return self._value

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 0


class RecordingSpout(KafkaSpout):
    def __init__(self) -> None:
        super().__init__()
        self.acks: list[Any] = []
        self.fails: list[Any] = []

    def ack(self, msg_id: Any) -> None:
        self.acks.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.fails.append(msg_id)


def executor() -> tuple[SpoutExecutor, RecordingSpout, _SpoutTask]:
    b = TopologyBuilder()
    b.set_spout("s", KafkaSpout(), 1)
    t = b.create_topology("t")
    ex = SpoutExecutor(t, "s", resolve({}), "127.0.0.1:1")
    spout = RecordingSpout()
    task = _SpoutTask(0, 0, spout, None)  # type: ignore[arg-type]
    return ex, spout, task


def test_second_completion_for_a_finished_root_is_ignored_and_counted() -> None:
    ex, spout, task = executor()
    ex.pending[11] = (task, ("t", 0, 5), 0.0)
    ex.pending[12] = (task, ("t", 0, 6), 0.0)
    task.pending = 2
    ex._results([Msg(encode_results([[RESULT_ACK, 11, 0.1], [RESULT_FAIL, 12, 0.2]]))])  # type: ignore[list-item]
    ex._results([Msg(encode_results([[RESULT_ACK, 11, 0.1], [RESULT_ACK, 12, 0.3]]))])  # duplicates after a crash
    assert spout.acks == [("t", 0, 5)] and spout.fails == [("t", 0, 6)]
    assert ex.stats.counters["ignored_results"] == 2
    assert ex.stats.counters["acked"] == 1 and ex.stats.counters["failed"] == 1
    assert task.pending == 0 and ex.pending == {}


def test_spout_side_timeout_fails_old_trees_in_emit_order() -> None:
    ex, spout, task = executor()
    ex.pending[1] = (task, "a", 100.0)
    ex.pending[2] = (task, "b", 110.0)
    task.pending = 2
    ex._timeouts(100.0 + 30.5)  # timeout 30 s: only "a" is past it
    assert spout.fails == ["a"] and list(ex.pending) == [2]
    assert ex.stats.counters["timeouts"] == 1


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
