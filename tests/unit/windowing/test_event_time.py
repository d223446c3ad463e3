"""Event-time windows: out-of-order input within the lag gives the windows of sorted input; later tuples are late (hypothesis, simulated clock)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.windowing import Count, Duration, WindowSpec
from streams.windowing.watermark import EventTimeWindows
from tests.unit.windowing.test_engine import SIZES, reference

LAG = 6.0


@st.composite
def shuffled(draw: st.DrawFn, within_lag: bool) -> tuple[WindowSpec, list[tuple[str, float, bool]]]:
    """A spec and ``(stream, ts, tick before it)`` arrivals: sorted times displaced by up to the lag (or by anything)."""
    spec = WindowSpec(draw(SIZES), draw(SIZES), timestamp="ts", lag_s=LAG, idle_s=30.0)
    times = sorted(draw(st.lists(st.integers(0, 120).map(float), max_size=40)))
    noise = st.floats(0, LAG) if within_lag else st.floats(0, 60)
    keyed = sorted(((t + draw(noise), t) for t in times), key=lambda p: p[0])  # arrival order: a bounded shuffle
    return spec, [(draw(st.sampled_from(["a", "b"])) if not within_lag else "a", t, draw(st.booleans())) for _, t in keyed]


def drive(spec: WindowSpec, arrivals: list[tuple[str, float, bool]]) -> tuple[list[tuple[float, list[int]]], list[int], EventTimeWindows[int]]:
    w: EventTimeWindows[int] = EventTimeWindows(spec)
    fired: list[tuple[float, list[int]]] = []
    late: list[int] = []
    now = 0.0
    for i, (stream, ts, tick) in enumerate(arrivals):
        now += 0.1
        if tick:
            fired += [(f.end, f.tuples) for f in w.tick(now)]
        before = w.watermark
        if not w.add(stream, ts, i, now):
            assert ts < before, "only a tuple older than the watermark is late"
            late.append(i)
    fired += [(f.end, f.tuples) for f in w.tick(now + 1.0)]
    fired += [(f.end, f.tuples) for f in w.tick(now + 100.0)]  # idle: the last windows fire
    return fired, late, w


def expected(spec: WindowSpec, arrivals: list[tuple[str, float, bool]], late: list[int]) -> list[tuple[float, list[int]]]:
    kept = sorted(((ts, i) for i, (_, ts, _) in enumerate(arrivals) if i not in late))
    items = [(i, ts) for ts, i in kept]
    until = max((ts for ts, _ in kept), default=0.0) + sum(s.seconds for s in (spec.length, spec.interval) if isinstance(s, Duration)) + 1e-6
    return [(end, [i for i, _ in held]) for end, held in reference(spec, items, until, ended=True)]


@settings(max_examples=300, deadline=None)
@given(shuffled(within_lag=True))
def test_out_of_order_within_the_lag_gives_the_windows_of_sorted_input(case: tuple[WindowSpec, list[tuple[str, float, bool]]]) -> None:
    spec, arrivals = case
    fired, late, _ = drive(spec, arrivals)
    assert late == []
    assert fired == expected(spec, arrivals, late)


@settings(max_examples=300, deadline=None)
@given(shuffled(within_lag=False))
def test_tuples_behind_the_watermark_go_late_and_the_rest_window_as_sorted(case: tuple[WindowSpec, list[tuple[str, float, bool]]]) -> None:
    spec, arrivals = case
    fired, late, w = drive(spec, arrivals)
    assert fired == expected(spec, arrivals, late)
    assert w.late == len(late)


@settings(max_examples=200, deadline=None)
@given(shuffled(within_lag=False))
def test_each_tuple_is_acked_once_after_its_last_window(case: tuple[WindowSpec, list[tuple[str, float, bool]]]) -> None:
    spec, arrivals = case
    w: EventTimeWindows[int] = EventTimeWindows(spec)
    acked: set[int] = set()
    late: set[int] = set()
    now = 0.0
    for i, (stream, ts, tick) in enumerate(arrivals):
        now += 0.1
        for f in w.tick(now) if tick else []:
            assert not acked & set(f.tuples)
        if not w.add(stream, ts, i, now):
            late.add(i)
        taken = w.take_expired()
        assert not acked & set(taken)
        acked |= set(taken)
    for f in w.tick(now + 100.0):
        assert not acked & set(f.tuples)
    acked |= set(w.take_expired())
    assert acked | late | set(w.held()) == set(range(len(arrivals)))
    assert not acked & set(w.held())


def test_the_watermark_is_the_slowest_channel_minus_the_lag() -> None:
    w: EventTimeWindows[str] = EventTimeWindows(WindowSpec.tumbling(Duration(10.0), timestamp="ts", lag_s=2.0))
    w.add("fast", 50.0, "f", now=0.0)
    w.add("slow", 12.0, "s", now=0.0)
    assert [f.tuples for f in w.tick(1.0)] == [] and w.watermark == 10.0
    w.add("slow", 25.0, "s2", now=1.5)
    assert [(f.end, f.tuples) for f in w.tick(2.0)] == [(20.0, ["s"])] and w.watermark == 23.0


def test_an_idle_stream_fires_its_last_windows_after_idle_s() -> None:
    w: EventTimeWindows[str] = EventTimeWindows(WindowSpec(Count(2), Count(2), timestamp="ts", idle_s=5.0))
    w.add("s", 1.0, "a", now=0.0)
    w.add("s", 2.0, "b", now=0.0)
    w.add("s", 3.0, "c", now=0.0)
    assert [f.tuples for f in w.tick(1.0)] == [["a", "b"]]  # watermark 3: a, b released
    assert w.tick(4.0) == [] and len(w) == 1  # c waits: newer tuples may come
    assert [f.tuples for f in w.tick(5.0)] == [["c"]]  # idle: the stream counts as ended, the partial window fires
    assert len(w) == 0 and w.take_expired() == ["a", "b", "c"]
    assert w.watermark > 3.0 and not w.add("s", 3.0, "late", now=6.0)


def test_an_idle_channel_stops_holding_the_watermark_back() -> None:
    w: EventTimeWindows[str] = EventTimeWindows(WindowSpec.tumbling(Duration(10.0), timestamp="ts", idle_s=5.0))
    w.add("parse:1/default", 3.0, "slow", now=0.0)
    w.add("parse:2/default", 40.0, "fast", now=0.0)
    assert w.tick(1.0) == [] and w.watermark == 3.0  # the slow channel holds it back
    w.add("parse:2/default", 45.0, "fast2", now=4.0)
    assert [(f.end, f.tuples) for f in w.tick(6.0)] == [(10.0, ["slow"])] and w.watermark == 45.0  # parse:1 idle since 0


def test_the_watermark_waits_for_every_expected_input_then_for_none_that_stays_idle() -> None:
    spec = WindowSpec.tumbling(Duration(10.0), timestamp="ts", idle_s=5.0)
    w: EventTimeWindows[str] = EventTimeWindows(spec)
    w.expect(["flights", "weather"], now=0.0)
    assert w.add("w:0", 100.0, "rain", now=0.1, input="weather")
    assert w.tick(now=1.0) == [] and w.watermark == -math.inf  # the flights, a hop or two behind, are not late yet
    assert w.add("f:0", 4.0, "UA 1545", now=1.5, input="flights")  # in time: without expect() it would be late
    assert w.add("f:0", 105.0, "AA 11", now=1.6, input="flights")
    assert [f.tuples for f in w.tick(now=2.0)] == [["UA 1545"]]
    quiet: EventTimeWindows[str] = EventTimeWindows(spec)
    quiet.expect(["flights", "weather"], now=0.0)
    quiet.add("w:0", 100.0, "rain", now=0.1, input="weather")
    quiet.add("w:0", 120.0, "sun", now=5.5, input="weather")
    assert quiet.tick(now=4.0) == []  # flights may still come
    assert [f.end for f in quiet.tick(now=6.0)] == [110.0]  # 5 s idle since expected: they no longer hold the watermark


def test_after_a_quiet_spell_the_inputs_are_expected_again() -> None:
    spec = WindowSpec.tumbling(Duration(10.0), timestamp="ts", idle_s=5.0)
    w: EventTimeWindows[str] = EventTimeWindows(spec)
    w.expect(["flights", "weather"], now=0.0)
    w.add("w:0", 1.0, "warm weather", now=0.1, input="weather")
    w.add("f:0", 1.0, "warm flight", now=0.2, input="flights")
    w.tick(now=0.3)
    assert [f.tuples for f in w.tick(now=6.0)] == [["warm weather", "warm flight"]]  # quiet: the stream ended, its windows fired
    w.tick(now=9.0)  # still quiet
    w.add("w:0", 5000.0, "rain", now=9.5, input="weather")  # the next burst: the weather, one hop, comes first
    assert w.tick(now=9.6) == [] and w.watermark < 1000.0  # the flights are expected again: they would be late otherwise
    assert w.add("f:0", 4990.0, "UA 1545", now=9.7, input="flights")
