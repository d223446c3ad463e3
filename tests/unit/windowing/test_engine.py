"""The window engine against a direct definition of Storm's windows (docs/Windowing.md), by hypothesis.

The reference computes every window from the whole input at once; the engine sees one item
at a time, with time advancing at arbitrary moments (a simulated clock: the timer's ticks).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.windowing import Count, Duration, Firing, WindowEngine, WindowSpec

Item = tuple[int, float]  # (arrival number, ts)

SIZES = st.one_of(st.builds(Count, st.integers(1, 6)), st.builds(Duration, st.integers(1, 12).map(float)))


def reference(spec: WindowSpec, items: list[Item], until: float, ended: bool = False) -> list[tuple[float, list[Item]]]:
    """Every window that fires by time ``until``: ``(end, items)``, in firing order.

    ``ended``: the stream ended (a flush after time moved past every item): a Count interval
    with a Count length fires its last, partial window (what the next window would hold).
    """
    length, interval = spec.length, spec.interval
    out: list[tuple[float, list[Item]]] = []
    if isinstance(interval, Count):
        for k in range(interval.n, len(items) + 1, interval.n):
            upto = items[:k]
            end = upto[-1][1]
            held = upto[-length.n :] if isinstance(length, Count) else [x for x in upto if x[1] > end - length.seconds]
            out.append((end, held))
        if ended and isinstance(length, Count) and len(items) % interval.n:
            next_fire = (len(items) // interval.n + 1) * interval.n
            tail = items[max(0, next_fire - length.n) :]
            if tail:
                out.append((items[-1][1], tail))
        return out
    i = interval.seconds
    end = i
    while end <= until:
        before = [x for x in items if x[1] < end]
        if isinstance(length, Count):
            held = before[-length.n :]
            fires = any(end - i <= x[1] < end for x in items)
        else:
            held = [x for x in before if x[1] >= end - length.seconds]
            fires = bool(held)
        if fires:
            out.append((end, held))
        end += i
    return out


def step_through(engine: WindowEngine[Item], steps: list[tuple[str, float]]) -> Iterator[tuple[str, float, list[Firing[Item]]]]:
    """Feed ``("add", ts)`` (item ``(n, ts)``, numbered from 1) and ``("advance", t)`` steps; yields each step with the windows it fired."""
    n = 0
    for kind, t in steps:
        if kind == "add":
            n += 1
            yield kind, t, engine.add(t, (n, t))
        else:
            yield kind, t, engine.advance(t)


def added(steps: list[tuple[str, float]]) -> set[Item]:
    """Every item the steps add."""
    return {(i + 1, t) for i, t in enumerate(t for kind, t in steps if kind == "add")}


def run(spec: WindowSpec, steps: list[tuple[str, float]]) -> tuple[list[tuple[float, list[Any]]], list[list[Item]], WindowEngine[Item]]:
    """Feed the engine ``("add", ts)``/``("advance", t)`` steps; returns its firings and the acks taken after each step."""
    engine: WindowEngine[Item] = WindowEngine(spec)
    fired: list[tuple[float, list[Any]]] = []
    acks: list[list[Item]] = []
    for _, _, got in step_through(engine, steps):
        for f in got:
            fired.append((f.end, f.tuples))
            acks.append([])  # a marker: a firing happened here
        acks.append(engine.take_expired())
    return fired, acks, engine


@st.composite
def feeds(draw: st.DrawFn) -> tuple[WindowSpec, list[tuple[str, float]], float]:
    spec = WindowSpec(draw(SIZES), draw(SIZES))
    gaps = draw(st.lists(st.integers(0, 7), max_size=40))
    steps: list[tuple[str, float]] = []
    t = 0.0
    for gap in gaps:
        t += gap
        if draw(st.booleans()):
            steps.append(("advance", t))  # a timer tick before the item
        steps.append(("add", t))
    until = t + 40.0
    steps.append(("advance", until))
    return spec, steps, until


@settings(max_examples=400, deadline=None)
@given(feeds())
def test_each_item_is_in_exactly_the_windows_it_belongs_to(case: tuple[WindowSpec, list[tuple[str, float]], float]) -> None:
    spec, steps, until = case
    fired, _, _ = run(spec, steps)
    assert fired == reference(spec, sorted(added(steps)), until)


@settings(max_examples=400, deadline=None)
@given(feeds())
def test_each_item_is_acked_once_and_only_after_its_last_window(case: tuple[WindowSpec, list[tuple[str, float]], float]) -> None:
    spec, steps, _ = case
    engine: WindowEngine[Item] = WindowEngine(spec)
    acked: set[Item] = set()
    for _, _, got in step_through(engine, steps):
        for f in got:
            assert not acked & set(f.tuples), "an acked item is in a later window"
        taken = engine.take_expired()
        assert not acked & set(taken), "acked twice"
        acked |= set(taken)
        assert not acked & set(engine.held()), "an acked item is still held"
    assert acked | set(engine.held()) == added(steps)


@settings(max_examples=200, deadline=None)
@given(feeds())
def test_expired_lists_what_left_since_the_previous_firing(case: tuple[WindowSpec, list[tuple[str, float]], float]) -> None:
    """Storm's ``TupleWindow.getExpired``/``getNew``: each item is new in one window at most and expired once."""
    spec, steps, _ = case
    engine: WindowEngine[Item] = WindowEngine(spec)
    news: list[Item] = []
    expired: list[Item] = []
    for _, _, got in step_through(engine, steps):
        for f in got:
            assert set(f.new) <= set(f.tuples)
            news += f.new
            expired += f.expired
    assert len(news) == len(set(news)) and len(expired) == len(set(expired))


@settings(max_examples=300, deadline=None)
@given(feeds(), st.booleans())
def test_the_previous_window_plus_new_minus_expired_is_the_window(case: tuple[WindowSpec, list[tuple[str, float]], float], end_with_flush: bool) -> None:
    """So a window can be aggregated incrementally (storm-starter's RollingCountBolt)."""
    spec, steps, _ = case
    engine: WindowEngine[Item] = WindowEngine(spec)
    previous: set[Item] = set()
    for kind, t, got in step_through(engine, steps):
        if end_with_flush and kind == "advance" and t == steps[-1][1]:
            got += engine.flush()
        for f in got:
            assert not previous & set(f.new) and set(f.expired) <= previous
            assert (previous | set(f.new)) - set(f.expired) == set(f.tuples)
            previous = set(f.tuples)


def test_a_tumbling_window_acks_its_items_as_soon_as_it_fired() -> None:
    e: WindowEngine[str] = WindowEngine(WindowSpec.tumbling(Count(2)))
    assert e.add(0.0, "a") == [] and e.take_expired() == []
    [f] = e.add(0.0, "b")
    assert f.tuples == ["a", "b"] and e.take_expired() == ["a", "b"] and len(e) == 0
    t: WindowEngine[str] = WindowEngine(WindowSpec.tumbling(Duration(10.0)))
    t.add(3.0, "x")
    [g] = t.advance(10.0)
    assert (g.start, g.end, g.tuples) == (0.0, 10.0, ["x"]) and t.take_expired() == ["x"]


def test_a_count_window_on_a_timer_does_not_fire_the_same_tuples_twice() -> None:
    """The last 3 tuples every 5 s: an idle stream does not re-fire the same window each interval."""
    e: WindowEngine[str] = WindowEngine(WindowSpec(Count(3), Duration(5.0)))
    for x in "abcd":
        e.add(1.0, x)
    assert [f.tuples for f in e.advance(5.0)] == [["b", "c", "d"]]
    assert e.advance(100.0) == [] and e.take_expired() == ["a"]


def test_a_flush_fires_the_partial_count_window_and_acks_everything() -> None:
    """The stream ended: the last 4 every 2, with 5 items, fires [3, 4, 5] (what the next window
    holds so far); the next window then comes after 2 new items."""
    e: WindowEngine[int] = WindowEngine(WindowSpec(Count(4), Count(2)))
    fired = [f.tuples for i in range(1, 6) for f in e.add(float(i), i)]
    assert fired == [[1, 2], [1, 2, 3, 4]]
    [last] = e.flush()
    assert (last.tuples, last.new, last.end) == ([3, 4, 5], [5], 5.0)
    assert sorted(e.take_expired()) == [1, 2, 3, 4, 5] and len(e) == 0
    assert e.flush() == []  # nothing new
    assert [f.tuples for i in (6, 7, 8) for f in e.add(float(i), i)] == [[6, 7]]


def test_a_flush_of_duration_windows_fires_nothing_and_acks_what_is_held() -> None:
    e: WindowEngine[str] = WindowEngine(WindowSpec(Duration(10.0), Duration(5.0)))
    e.add(1.0, "a")
    assert e.flush() == [] and e.take_expired() == ["a"]
    assert e.advance(20.0) == []


def test_items_no_window_can_hold_are_acked_at_once() -> None:
    """Windows of 2 s every 10 s leave gaps: an item in a gap is acked without firing."""
    e: WindowEngine[str] = WindowEngine(WindowSpec(Duration(2.0), Duration(10.0)))
    e.add(3.0, "gap")
    assert e.take_expired() == ["gap"] and len(e) == 0
    e.add(9.0, "in")
    assert [f.tuples for f in e.advance(10.0)] == [["in"]]


@settings(max_examples=300, deadline=None)
@given(feeds(), st.integers(0, 80), st.booleans())
def test_an_engine_saved_and_loaded_midway_fires_as_the_original(case: tuple[WindowSpec, list[tuple[str, float]], float], cut: int, flush: bool) -> None:
    """A stateful windowed bolt's checkpoint: dump (items by number), JSON, load; the rest of the input fires the same windows and acks."""
    import json

    spec, steps, _ = case
    cut = min(cut, len(steps))
    original: WindowEngine[Item] = WindowEngine(spec)
    n = 0
    for kind, t in steps[:cut]:
        if kind == "add":
            n += 1
            original.add(t, (n, t))
        else:
            original.advance(t)
    items: dict[int, Item] = {}

    def ref(item: Item) -> int:
        items[item[0]] = item
        return item[0]

    saved = json.loads(json.dumps(original.dump(ref)))
    copy = WindowEngine.load(spec, saved, lambda r: items[r])
    assert list(copy.held()) == list(original.held())
    for engine in (original, copy):
        m = n
        out = []
        for kind, t in steps[cut:]:
            if kind == "add":
                m += 1
                fired = engine.add(t, (m, t))
            else:
                fired = engine.advance(t)
            out.append(([(f.start, f.end, f.tuples, f.new, f.expired) for f in fired], engine.take_expired()))
        if flush:
            out.append(([(f.start, f.end, f.tuples, f.new, f.expired) for f in engine.flush()], engine.take_expired()))
        if engine is original:
            expected = out
    assert out == expected
