"""Stateful windowed bolts (Storm's IStatefulWindowedBolt with persistence; issue 26), no broker: the
window survives a crash, tuples are acked at checkpoints, replays of what a checkpoint holds are
skipped, a failing window rolls state and window back together, and event-time windows keep their
watermark."""

from __future__ import annotations

from typing import Any

import pytest

from streams import Bolt, Spout, StatefulWindowedBolt, TopologyBuilder, Tuple, TupleWindow
from streams.config import TopologyConfig
from streams.exceptions import FailedException
from streams.model.context import TopologyContext
from streams.model.io import ExecutorIO
from streams.model.stateful import StatefulBoltExecutor
from streams.model.stateful_windowed import PersistentWindows
from streams.model.tuple import tick_tuple
from streams.runtime.acks import AckBuffer
from streams.state import OpenedStores
from streams.state.keyvalue import KeyValueState
from streams.windowing import Count, Duration
from tests.unit.sim import Capture, as_tuple, collector


class Totals(StatefulWindowedBolt):
    """Adds each fired window's numbers to a running total per key, and records the windows it saw."""

    def __init__(self) -> None:
        self.fail_windows = 0

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["total"])

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, window: TupleWindow) -> None:
        if self.fail_windows:
            self.fail_windows -= 1
            raise FailedException("the sink refused the window")
        for t in window.get_new():
            self.state[t.get("key")] = self.state.get(t.get("key"), 0) + t.get("n")
        self.state["windows"] = [*self.state.get("windows", []), [t.get("n") for t in window.get()]]
        self.collector.emit([sum(t.get("n") for t in window.get())])


class Nums(Spout):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "n", "ts"])

    def next_tuple(self) -> None:
        """Not run: the tests hand the bolt its tuples."""


class Sink(Bolt):
    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        """Not run."""


def topology(bolt: StatefulWindowedBolt, url: str) -> Any:
    b = TopologyBuilder()
    b.set_spout("nums", Nums())
    b.set_bolt("totals", bolt).global_grouping("nums")
    b.set_bolt("sink", Sink()).global_grouping("totals")
    return b.create_topology("sw", {"squall.state.url": url, "topology.state.checkpoint.interval.ms": 1000})


class Task:
    """One life of the task: a fresh executor restored from the store (a restart after a crash)."""

    def __init__(self, bolt: StatefulWindowedBolt, url: str, stores: OpenedStores, clock: list[float]) -> None:
        t = topology(bolt, url)
        self.ex = t.components["totals"].new_instance()
        assert isinstance(self.ex, StatefulBoltExecutor) and isinstance(self.ex.inner, PersistentWindows)
        self.ex.clock = lambda: clock[0]
        self.ex.inner.clock = lambda: clock[0]
        self.acks = AckBuffer("acker", 1)
        self.out = Capture()
        conf = TopologyConfig.model_validate({"squall.state.url": url, "topology.state.checkpoint.interval.ms": 1000})
        ctx = TopologyContext(t, "totals", t.components["totals"].task_base, io=ExecutorIO(stores=stores), config=conf)
        self.ex.prepare({}, ctx, collector(self.out, self.acks, tuple_ids=True))

    @property
    def user(self) -> Totals:
        inner = self.ex.inner
        assert isinstance(inner, PersistentWindows) and isinstance(inner.user, Totals)
        return inner.user

    @property
    def held(self) -> list[int]:
        inner = self.ex.inner
        assert isinstance(inner, PersistentWindows) and inner.windows is not None
        return [t.get("n") for t in inner.windows.held()]


def num(n: int, ts: float = 0.0) -> Tuple:
    t = Tuple(["k", n, ts], "default", "nums", 0, {n: 7}, {"key": 0, "n": 1, "ts": 2}, "squall.sw.totals", 0, n)
    t.tid = (1, n, 0)
    return t


def tick(task: Task, clock: list[float], dt: float) -> None:
    clock[0] += dt
    task.ex.execute(tick_tuple())


def test_the_window_survives_a_crash_and_every_tuple_counts_once() -> None:
    stores = OpenedStores()  # one per run, as an executor's: a restarted task finds what the last life saved
    clock = [1000.0]
    a = Task(Totals().with_tumbling_window(Count(3)), "memory://", stores, clock)
    for n in range(1, 6):  # 1..3 fire; 4, 5 wait in the window
        a.ex.execute(num(n))
    assert a.user.state["windows"] == [[1, 2, 3]] and a.held == [4, 5]
    assert not a.acks.acks  # acked at the checkpoint, not before
    tick(a, clock, 1.5)  # the checkpoint: 1..5 acked, the window [4, 5] saved
    assert set(a.acks.acks) == {1, 2, 3, 4, 5}
    a.ex.execute(num(6))  # fires [4, 5, 6]: not checkpointed, then the worker dies
    assert a.user.state["windows"] == [[1, 2, 3], [4, 5, 6]]

    b = Task(Totals().with_tumbling_window(Count(3)), "memory://", stores, clock)
    assert b.held == [4, 5] and b.user.state["windows"] == [[1, 2, 3]] and b.user.state["k"] == 6
    for n in (5, 6, 7, 8, 9):  # 5: a replay of what the checkpoint holds (skipped); 6..9 replayed or new
        b.ex.execute(num(n))
    assert b.ex.duplicates == 1
    assert b.user.state["windows"] == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert b.user.state["k"] == sum(range(1, 10))  # every tuple once
    assert dict(b.user.state.items()).keys() == {"k", "windows"}  # the window's own keys are hidden
    assert len(b.user.state) == 2


def test_a_failing_window_rolls_state_and_window_back_and_its_tuples_replay() -> None:
    stores = OpenedStores()  # one per run, as an executor's: a restarted task finds what the last life saved
    clock = [1000.0]
    bolt = Totals().with_tumbling_window(Count(2))
    a = Task(bolt, "memory://", stores, clock)
    a.ex.execute(num(1))
    a.ex.execute(num(2))
    tick(a, clock, 1.5)
    a.ex.execute(num(3))
    a.user.fail_windows = 1
    a.ex.execute(num(4))  # [3, 4] fails: back to the checkpoint (window empty, k = 3)
    assert a.ex.rollbacks == 1 and {3, 4} <= set(a.acks.fails)
    assert a.held == [] and a.user.state["k"] == 3 and a.user.state["windows"] == [[1, 2]]
    a.ex.execute(num(3))  # the replays
    a.ex.execute(num(4))
    assert a.user.state["windows"] == [[1, 2], [3, 4]] and a.user.state["k"] == 10


def test_emits_are_not_anchored_to_the_window() -> None:
    a = Task(Totals().with_tumbling_window(Count(2)), "memory://", OpenedStores(), [0.0])
    a.ex.execute(num(1))
    a.ex.execute(num(2))
    emitted = [as_tuple(raw) for _, raw in a.out.records]
    assert [t.values for t in emitted] == [[3]] and emitted[0].anchors == {}


def test_event_time_windows_keep_their_watermark_across_a_crash() -> None:
    stores = OpenedStores()  # one per run, as an executor's: a restarted task finds what the last life saved
    clock = [1000.0]

    def bolt() -> Totals:
        return Totals().with_tumbling_window(Duration(10.0)).with_timestamp_field("ts").with_watermark_interval(0.1)

    a = Task(bolt(), "memory://", stores, clock)
    for n, ts in ((1, 1.0), (2, 5.0), (3, 12.0), (4, 14.0)):
        a.ex.execute(num(n, ts))
    tick(a, clock, 1.5)  # the watermark reaches 14: [0, 10) fires with 1, 2; then the checkpoint
    assert a.user.state["windows"] == [[1, 2]]
    b = Task(bolt(), "memory://", stores, clock)
    assert sorted(b.held) == [3, 4]
    b.ex.execute(num(5, 3.0))  # behind the restored watermark: late, not in a window
    b.ex.execute(num(6, 25.0))
    tick(b, clock, 0.2)
    assert b.user.state["windows"] == [[1, 2], [3, 4]]
    assert b.user.state["k"] == 1 + 2 + 3 + 4


@pytest.mark.parametrize("spec", ["count", "duration"])
def test_a_restored_task_with_nothing_checkpointed_starts_empty(spec: str) -> None:
    size = Count(3) if spec == "count" else Duration(5.0)
    a = Task(Totals().with_tumbling_window(size), "memory://", OpenedStores(), [0.0])
    assert a.held == [] and dict(a.user.state.items()) == {}
