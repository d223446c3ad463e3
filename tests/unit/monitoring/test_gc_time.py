"""A worker's cyclic-GC clock (streams/monitoring/gc_time.py): collections and seconds per generation."""

from __future__ import annotations

import gc

from hypothesis import given
from hypothesis import strategies as st

from streams.monitoring.gc_time import GcTime


def test_a_real_collection_is_counted_in_its_generation_and_takes_time() -> None:
    clock = GcTime().install()
    try:
        gc.collect(1)
        gc.collect()
    finally:
        clock.uninstall()
    assert clock.collections[1] >= 1 and clock.collections[2] >= 1
    assert clock.total_seconds > 0
    assert clock.callback not in gc.callbacks
    assert "collections (gen0" in clock.summary()


def test_install_twice_counts_once() -> None:
    clock = GcTime().install().install()
    try:
        assert gc.callbacks.count(clock.callback) == 1
    finally:
        clock.uninstall()
    clock.uninstall()  # idempotent too
    assert clock.callback not in gc.callbacks


@given(spans=st.lists(st.tuples(st.integers(0, 2), st.floats(0, 5)), max_size=20))
def test_the_totals_are_the_sum_of_the_spans(spans: list[tuple[int, float]]) -> None:
    times: list[float] = []
    now = 0.0
    for _gen, span in spans:
        times += [now, now + span]
        now += span + 1
    clock = GcTime(clock=iter(times).__next__)
    for gen, _span in spans:
        clock.callback("start", {"generation": gen})
        clock.callback("stop", {"generation": gen})
    for g in range(3):
        assert clock.collections[g] == sum(1 for gen, _ in spans if gen == g)
        assert abs(clock.seconds[g] - sum(s for gen, s in spans if gen == g)) < 1e-6
