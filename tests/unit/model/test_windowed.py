"""Windowed bolts on the real collector and acker ledger, with a simulated clock (no broker).

Storm's guarantees (docs/Windowing.md, "Guarantees"): a window's tuples are acked when they
expire, emits are anchored to the window, and a tree completes only once its tuple left
every window and the results anchored to it were acked downstream.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acker.ledger import Ledger
from streams import Count, Duration, Spout, TopologyBuilder, Tuple, TupleWindow, WindowedBolt
from streams.config import TopologyConfig, resolve
from streams.exceptions import TopologyError
from streams.model.checks import check_confs
from streams.model.component import Hold
from streams.model.context import TopologyContext
from streams.model.tuple import tick_tuple
from streams.model.windowed import LATE_FIELDS, WindowedBoltExecutor, WindowError
from streams.runtime.acks import AckBuffer
from streams.wire.acker import OP_INIT
from tests.unit.sim import Capture, apply_ops, as_tuple, collector


class Lines(Spout):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["v", "ts"])


class Sum(WindowedBolt):
    def __init__(self, fail_on: int | None = None) -> None:
        self.fail_on = fail_on
        self.windows: list[TupleWindow] = []

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["sum"])

    def execute(self, window: TupleWindow) -> None:
        self.windows.append(window)
        total = sum(t.get("v") for t in window.get())
        if total == self.fail_on:
            raise RuntimeError("boom")
        self.collector.emit([total])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def running(bolt: WindowedBolt, conf: dict[str, Any] | None = None) -> tuple[WindowedBoltExecutor, Capture, AckBuffer, Clock]:
    b = TopologyBuilder()
    b.set_spout("s", Lines())
    b.set_bolt("w", bolt).shuffle_grouping("s")
    topology = b.create_topology("t", conf)
    wrapped = topology.components["w"].new_instance()
    assert isinstance(wrapped, WindowedBoltExecutor)
    clock = Clock()
    wrapped.clock = clock
    cap, acks = Capture(), AckBuffer("acker", 1)
    ctx = TopologyContext(topology, "w", topology.components["w"].task_base)
    wrapped.prepare({}, ctx, collector(cap, acks))
    return wrapped, cap, acks, clock


def spout_tuple(root: int, v: int, ts: float = 0.0) -> Tuple:
    return Tuple([v, ts], "default", "s", 0, {root: root * 7 + 1}, {"v": 0, "ts": 1}, "squall.t.w", 0, root)


SPECS = st.sampled_from(
    [
        (Count(3), Count(1)),
        (Count(4), Count(2)),
        (Count(2), Count(2)),
        (Count(2), Count(5)),
        (Duration(10.0), Duration(5.0)),
        (Duration(5.0), Duration(5.0)),
        (Count(3), Duration(5.0)),
        (Duration(6.0), Count(2)),
    ]
)


@settings(max_examples=150, deadline=None)
@given(SPECS, st.lists(st.tuples(st.booleans(), st.integers(0, 4)), max_size=30))
def test_a_tree_completes_exactly_when_its_tuple_left_every_window(spec: tuple[Any, Any], steps: list[tuple[bool, int]]) -> None:
    """Each input is its own tree; results are acked downstream as soon as they are emitted."""
    bolt, cap, acks, clock = running(Sum().with_window(*spec), {"topology.message.timeout.secs": 100})
    downstream = collector(Capture(), acks)
    ledger = Ledger(1e9)
    inputs: list[Tuple] = []
    completed: set[int] = set()
    seen = 0
    for is_tick, gap in [*steps, (True, 50)]:
        clock.now += gap
        if is_tick:
            bolt.execute(tick_tuple())
        else:
            t = spout_tuple(len(inputs) + 1, 1)
            inputs.append(t)
            apply_ops(ledger, [[OP_INIT, next(iter(t.anchors)), next(iter(t.anchors.values())), 0]])
            bolt.execute(t)
        for _, raw in cap.records[seen:]:
            result = as_tuple(raw)
            assert set(result.anchors) <= {next(iter(t.anchors)) for t in inputs}, "anchored to the window's tuples"
            downstream.ack(result)
        seen = len(cap.records)
        for out in apply_ops(ledger, [op for ops in acks.drain().values() for op in ops]):
            assert out.acked
            completed.add(out.root)
        settled = {next(iter(t.anchors)) for t in inputs if t.settled}
        assert completed == settled, "a tree completes when (and only when) its tuple expired"
    assert bolt.windows is not None
    held = {id(t) for t in bolt.windows.held()}
    assert all(t.settled != (id(t) in held) for t in inputs), "every tuple is either held or acked"


def test_emits_are_anchored_to_every_tuple_of_the_window() -> None:
    bolt, cap, _, _ = running(Sum().with_tumbling_window(Count(3)))
    for i in range(1, 4):
        bolt.execute(spout_tuple(i, i))
    [(_, raw)] = cap.records
    result = as_tuple(raw)
    assert result.values == [6] and set(result.anchors) == {1, 2, 3}


def test_a_processing_time_window_fires_on_an_idle_stream_from_the_timer() -> None:
    inner = Sum().with_tumbling_window(Duration(5.0))
    bolt, cap, _, clock = running(inner)
    assert bolt.get_component_configuration() == {"topology.tick.tuple.freq.secs": 1.0}
    bolt.execute(spout_tuple(1, 2))
    assert cap.records == []
    clock.now += 10
    bolt.execute(tick_tuple())
    assert [as_tuple(r).values for _, r in cap.records] == [[2]]
    assert inner.windows == [] and len(bolt.inner.windows) == 1  # type: ignore[attr-defined]
    w = bolt.inner.windows[0]  # type: ignore[attr-defined]
    assert (w.start, w.end) == (1000.0, 1005.0) and len(w) == 1


def test_execute_raising_fails_the_windows_tuples_and_names_the_component() -> None:
    bolt, _, acks, _ = running(Sum(fail_on=3).with_tumbling_window(Count(2)))
    a, b = spout_tuple(1, 1), spout_tuple(2, 2)
    bolt.execute(a)
    with pytest.raises(WindowError, match=r"\[w\] execute of window .* with 2 tuples failed: RuntimeError\('boom'\)"):
        bolt.execute(b)
    assert a.settled and b.settled and set(acks.fails) == {1, 2}


def test_late_tuples_go_to_the_late_stream_anchored_and_are_acked() -> None:
    b = TopologyBuilder()
    b.set_spout("s", Lines())
    inner = Sum().with_tumbling_window(Duration(10.0)).with_timestamp_field("ts").with_lag(1.0).with_late_tuple_stream("late")
    b.set_bolt("w", inner).shuffle_grouping("s")
    topology = b.create_topology("t", {"topology.message.timeout.secs": 60})
    assert topology.fields("w", "late") == LATE_FIELDS
    bolt, cap, _, clock = running(Sum().with_tumbling_window(Duration(10.0)).with_timestamp_field("ts").with_lag(1.0).with_late_tuple_stream("late"))
    router = bolt.collector.router  # type: ignore[attr-defined]
    router.routes["late"], router.outputs["late"], router.direct["late"] = router.routes["default"], [], False
    bolt.execute(spout_tuple(1, 1, ts=25.0))
    clock.now += 1
    bolt.execute(tick_tuple())  # watermark 24: [10, 20) is closed
    late = spout_tuple(2, 5, ts=15.0)
    bolt.execute(late)
    [(_, raw)] = cap.records
    out = as_tuple(raw)
    assert out.stream == "late" and out.values == [[5, 15.0], 15.0, 24.0] and set(out.anchors) == {2}
    assert late.settled and bolt.late_count == 1


def test_a_tuple_without_its_timestamp_is_refused_naming_component_and_record() -> None:
    bolt, _, _, _ = running(Sum().with_tumbling_window(Duration(10.0)).with_timestamp_field("when"), {"topology.message.timeout.secs": 60})
    with pytest.raises(WindowError, match=r"\[w\] no event time in the tuple from s at squall\.t\.w\[0\]@7: .*'when'"):
        bolt.execute(spout_tuple(7, 1))


def test_a_message_timeout_below_the_window_is_refused_naming_the_component() -> None:
    b = TopologyBuilder()
    b.set_spout("s", Lines())
    b.set_bolt("rolling", Sum().with_window(Duration(20.0), Duration(10.0))).shuffle_grouping("s")
    topology = b.create_topology("t")
    with pytest.raises(TopologyError, match=r"\[rolling\] its window holds tuples up to 30 s .* topology.message.timeout.secs is 30 s"):
        check_confs(topology)
    confs = check_confs(topology, {"topology.message.timeout.secs": 45})
    assert confs["rolling"].message_timeout_secs == 45
    check_confs(topology, {"topology.acker.executors": 0})  # untracked: nothing times out


def test_a_windowed_bolt_without_a_window_is_refused_at_set_bolt() -> None:
    b = TopologyBuilder()
    with pytest.raises(TopologyError, match=r"\[w\] a WindowedBolt needs a window"):
        b.set_bolt("w", Sum())
    with pytest.raises(TopologyError, match=r"\[w\] lag_s and late_stream need event time"):
        b.set_bolt("w", Sum().with_tumbling_window(Count(2)).with_lag(3.0))


def test_cleanup_fails_the_held_tuples_so_they_replay_at_once() -> None:
    bolt, _, acks, _ = running(Sum().with_tumbling_window(Count(5)))
    held = [spout_tuple(i, 1) for i in (1, 2)]
    for t in held:
        bolt.execute(t)
    bolt.cleanup()
    assert set(acks.fails) == {1, 2}


def test_beyond_max_tuples_new_tuples_are_failed_and_counted() -> None:
    bolt, _, acks, _ = running(Sum().with_tumbling_window(Count(10)).with_max_tuples(2))
    for i in (1, 2, 3):
        bolt.execute(spout_tuple(i, 1))
    assert set(acks.fails) == {3} and bolt.refused == 1


def test_spouts_keep_room_for_what_windows_hold() -> None:
    b = TopologyBuilder()
    b.set_spout("s", Lines(), 2)
    b.set_bolt("w", Sum().with_window(Count(100), Count(10)), 3).shuffle_grouping("s")
    b.set_bolt("t", Sum().with_tumbling_window(Duration(30.0)), 1).shuffle_grouping("s")
    b.set_bolt("e", Sum().with_tumbling_window(Duration(10.0)).with_timestamp_field("ts"), 1).shuffle_grouping("s")
    assert b.create_topology("t").hold() == Hold(330, 60.0, True)


def test_a_users_faster_tick_is_kept() -> None:
    bolt = WindowedBoltExecutor(Sum().with_tumbling_window(Duration(5.0)))

    class Ticking(Sum):
        def get_component_configuration(self) -> dict[str, Any]:
            return {"topology.tick.tuple.freq.secs": 0.25}

    fast = WindowedBoltExecutor(Ticking().with_tumbling_window(Duration(5.0)))
    assert bolt.get_component_configuration() == {"topology.tick.tuple.freq.secs": 1.0}
    assert fast.get_component_configuration() == {"topology.tick.tuple.freq.secs": 0.25}
    conf: TopologyConfig = resolve(fast.get_component_configuration())
    assert conf.tick_tuple_freq_secs == 0.25


def test_an_idle_timeout_fires_the_partial_count_window_and_acks_the_rest() -> None:
    inner = Sum().with_window(Count(4), Count(2)).with_idle_timeout(5.0)
    bolt, cap, acks, clock = running(inner)
    tuples = [spout_tuple(i, i) for i in (1, 2, 3)]
    for t in tuples:
        bolt.execute(t)
    clock.now += 4
    bolt.execute(tick_tuple())
    assert [as_tuple(r).values for _, r in cap.records] == [[3]] and not tuples[2].settled
    clock.now += 1
    bolt.execute(tick_tuple())
    assert [as_tuple(r).values for _, r in cap.records] == [[3], [6]]  # [1, 2, 3]: what the next window holds so far
    assert all(t.settled for t in tuples) and not acks.fails
