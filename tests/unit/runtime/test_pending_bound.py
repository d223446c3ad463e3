"""The adaptive bound on trees in flight (issue 13), driven by a simulated topology."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.runtime.pending_bound import AdaptiveBound, FixedBound


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def simulate(service_rate: float, base_latency_s: float, seconds: float, target_s: float = 1.0, hold_s: float = 0.0) -> tuple[AdaptiveBound, list[float]]:
    """A spout with unlimited input in front of a topology that completes ``service_rate``
    trees/s after ``base_latency_s`` of transit, plus queueing (Little's law: a queue of
    ``pending - rate * base`` trees waits ``queue / rate``). Returns the bound and the
    complete latency of every second."""
    clock = Clock()
    b = AdaptiveBound(target_s=target_s, clock=clock, hold_s=hold_s)  # starts at 100 per task
    latencies = []
    for _ in range(int(seconds * 10)):  # 0.1 s steps
        clock.now += 0.1
        pending = b.limit  # unlimited input: the spout always fills the bound
        b.hit()
        queue = max(0.0, pending - service_rate * base_latency_s)
        latency = base_latency_s + queue / service_rate
        for _ in range(int(min(service_rate, pending / latency) * 0.1)):
            b.completed(latency)
        b.adjust(oldest_age_s=latency)
        latencies.append(latency)
    return b, latencies


@pytest.mark.parametrize(("rate", "base"), [(12_000.0, 0.34), (60_000.0, 0.2), (200.0, 0.3)])
def test_it_settles_near_the_target_at_full_throughput(rate: float, base: float) -> None:
    """A fast topology: the bound grows until latency nears the target, so throughput is the
    topology's own limit, not pending / latency. A slow bolt (200/s): the bound shrinks
    until latency is near the target instead of growing towards the message timeout."""
    b, latencies = simulate(rate, base, seconds=120)
    tail = latencies[-300:]
    assert max(tail) <= 1.0 * 1.5  # near the target, never towards a timeout
    throughput = min(rate, b.limit / tail[-1])
    assert throughput >= 0.9 * rate  # Little's law no longer caps it


def test_a_checkpoint_hold_does_not_end_slow_start() -> None:
    """Acks that wait for a stateful bolt's checkpoint (1 s interval: 0.5 s on average, plus 0.1 s
    of work): the hold is taken off each latency, so the bound doubles to full throughput within
    a few seconds; counting the hold as latency (the target raised by it instead) left slow start
    at once and took most of a benchmark run to grow."""
    rate, work, interval = 9_000.0, 0.1, 1.0

    def run(hold_s: float, target_s: float, seconds: float) -> tuple[float, list[float]]:
        """Seconds until the bound allows 90% of the rate, and the worst latency of each step."""
        clock = Clock()
        bound = AdaptiveBound(target_s=target_s, clock=clock, hold_s=hold_s)
        full, worst = seconds, []
        for step in range(int(seconds * 10)):
            clock.now += 0.1
            bound.hit()
            queue = max(0.0, bound.limit - rate * (work + interval / 2)) / rate
            done = int(min(rate, bound.limit / (work + interval / 2 + queue)) * 0.1)
            for k in range(done):  # each tree waited for the next checkpoint: 0 to 1 s
                bound.completed(work + queue + interval * k / max(done, 1))
            bound.adjust(oldest_age_s=work + queue + interval)
            worst.append(work + queue + interval)
            if full == seconds and bound.limit / (work + interval / 2 + queue) >= 0.9 * rate:
                full = (step + 1) / 10
        return full, worst

    with_hold, worst = run(hold_s=interval, target_s=1.0, seconds=60)
    raised_target, _ = run(hold_s=0.0, target_s=1.0 + interval, seconds=60)
    assert with_hold <= 5.0 and raised_target >= 2 * with_hold, (with_hold, raised_target)
    assert max(worst[-300:]) <= interval + 1.0 * 1.5  # the hold plus about the target, never towards a timeout


def test_timeouts_shrink_it_and_fixed_is_fixed() -> None:
    clock = Clock()
    b = AdaptiveBound(initial=1000, floor=100, clock=clock)
    for _ in range(20):
        clock.now += 1.0
        b.timed_out()
        b.adjust(0.0)
    assert b.limit == 100  # never below the floor
    f = FixedBound(1234)
    f.hit()
    f.timed_out()
    assert f.adjust(99.0) == "fixed" and f.limit == 1234
    with pytest.raises(ValueError, match="floor <= initial <= ceiling"):
        AdaptiveBound(initial=10, floor=50)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 30.0), st.booleans(), st.booleans(), st.floats(0.0, 3.0)), max_size=200))
def test_it_stays_in_range_and_moves_at_most_once_per_window(events: list[tuple[float, bool, bool, float]]) -> None:
    """After slow start, the bound moves at most once per window (slow start is below)."""
    clock = Clock()
    b = AdaptiveBound(initial=500, floor=50, ceiling=5000, window_s=1.0, clock=clock)
    b.slow_start = False
    last_change = -10.0
    for latency, hit, timeout, step in events:
        clock.now += step
        b.completed(latency)
        if hit:
            b.hit()
        if timeout:
            b.timed_out()
        before = b.limit
        what = b.adjust(oldest_age_s=latency)
        assert 50 <= b.limit <= 5000
        if b.limit != before:
            assert clock.now - last_change >= 1.0 - 1e-9  # float sums of the steps
            last_change = clock.now
            assert (what == "grow") == (b.limit > before)
        if timeout and what != "wait":
            assert b.limit <= before  # a timeout never grows it


def test_slow_start_grows_per_fast_completion_and_ends_at_half_the_target() -> None:
    """TCP's slow start: the bound reaches a fast topology's Little's-law need (60k trees/s x
    0.2 s = 12k) in about a second of simulated time, not the ~7 s that doubling once per 1 s
    window took; a slow bolt ends slow start at once, so its first trees never near a timeout."""
    fast, _ = simulate(60_000.0, 0.2, seconds=1.5)
    assert fast.limit >= 12_000
    slow, latencies = simulate(200.0, 0.3, seconds=10)
    assert not slow.slow_start and max(latencies) <= 1.0 * 1.5


def test_trees_far_within_the_target_grow_it_up_to_4x_per_complete_latency() -> None:
    """Trees of 0.12 s against a 1 s target: each raises the bound by its ids times
    0.5 / 0.12 - 1 (at most 3), so the need (60k trees/s x 0.12 s = 7,200) is reached in half
    the time doubling took, and the latency that growth brings stays within half the target."""
    quick, latencies = simulate(60_000.0, 0.12, seconds=0.5)
    assert quick.limit >= 7_200 and max(latencies) <= 0.5
    clock = Clock()
    b = AdaptiveBound(initial=100, target_s=1.0, clock=clock)
    b.hit()
    b.completed(0.1, weight=10)  # 0.5 / 0.1 - 1 = 4, at most 3
    assert b.limit == 130
    b.completed(0.2, weight=10)  # 0.5 / 0.2 - 1 = 1.5
    assert b.limit == 145
    b.completed(0.3, weight=10)  # past a quarter of the target: its ids, as TCP's slow start
    assert b.limit == 155
    held = AdaptiveBound(initial=100, target_s=1.0, clock=clock, hold_s=0.05)
    held.hit()
    held.completed(0.15, weight=10)  # a held topology grows by its own rule (HOLD_BOOST), not this one
    assert held.limit == 110


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 2.0), st.integers(1, 100), st.booleans()), max_size=200))
def test_in_slow_start_it_grows_by_the_message_ids_completed_fast(events: list[tuple[float, int, bool]]) -> None:
    clock = Clock()
    b = AdaptiveBound(initial=100, target_s=1.0, floor=50, ceiling=100_000, clock=clock)
    for latency, weight, hit in events:
        if hit:
            b.hit()
        before, was_slow_start = b.limit, b.slow_start
        b.completed(latency, weight)
        grew = b.limit - before
        quick = int(weight * min(3, 0.5 / max(latency, 1e-9) - 1)) if latency < 0.25 else weight  # far within the target: Little's law
        assert 0 <= grew <= (quick if was_slow_start and latency <= 0.5 else 0)
        if was_slow_start and hit and latency <= 0.5 and b.limit < 100_000:
            assert grew == quick
        if latency > 0.5:
            assert not b.slow_start  # a tree slower than half the target ends it for good


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0.51, 1.0), min_size=1, max_size=50), st.floats(0.0, 1.0))
def test_after_slow_start_it_grows_by_the_target_over_the_slowest_latency(latencies: list[float], oldest: float) -> None:
    """Little's law: trees in flight scale with complete latency, so a window whose slowest
    tree took ``s`` (all within the target, none timed out) grows the bound by ``target / s``,
    at least 30% and at most 2x."""
    clock = Clock()
    b = AdaptiveBound(initial=1000, target_s=1.0, ceiling=100_000, clock=clock)
    for latency in latencies:
        b.completed(latency)  # above half the target: slow start is over
    b.hit()
    clock.now = 1.0
    assert b.adjust(oldest_age_s=oldest) == "grow"
    factor = min(2.0, max(1.3, 1.0 / max(*latencies, oldest)))
    assert b.limit == int(1000 * factor)


def test_a_window_of_fast_trees_at_the_bound_starts_slow_start_again() -> None:
    """A start-up hiccup ended slow start; once every tree of a window is fast while the task is
    held back, the bound grows per completion again instead of one doubling per window."""
    clock = Clock()
    b = AdaptiveBound(initial=1000, target_s=1.0, clock=clock)
    b.completed(0.8)  # the first tree was slow
    clock.now = 1.0
    assert b.adjust(oldest_age_s=0.0) == "keep" and not b.slow_start
    b.hit()
    for _ in range(10):
        b.completed(0.1)
    clock.now = 2.0
    assert b.adjust(oldest_age_s=0.1) == "grow" and b.limit == 2000 and b.slow_start
    b.hit()
    b.completed(0.3, weight=50)
    assert b.limit == 2050  # per completion, as in slow start
    b.completed(0.6)  # slower than half the target: over again
    assert not b.slow_start
    clock.now = 3.0
    b.hit()
    assert b.adjust(oldest_age_s=0.6) == "grow" and not b.slow_start  # a window that was not all fast does not restart it
