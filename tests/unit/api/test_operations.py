"""Each Stream API operation's semantics, against a direct computation in Python (hypothesis)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.api import Count, Mean, SlidingWindows, TumblingWindows
from streams.testing import run_stream
from tests.unit.api.helpers import run_two

ints = st.lists(st.integers(-50, 50), max_size=40)
words = st.lists(st.sampled_from(["a", "b", "c", "dd", "eee"]), max_size=40)
pairs = st.lists(st.tuples(st.sampled_from(["k1", "k2", "k3"]), st.integers(0, 9)), max_size=12)

ALL = TumblingWindows.of(Count(100_000)).with_idle_timeout(1.0)
"""One window holding every tuple, fired when the input ends."""


@settings(max_examples=30)
@given(ints)
def test_fused_filter_map_flat_map_peek_keep_order_and_values(values: list[int]) -> None:
    seen: list[int] = []
    got = run_stream(lambda s: s.filter(lambda n: n % 3 != 0).map(lambda n: n * 2).flat_map(lambda n: [n, -n]).peek(seen.append), values)
    expected = [y for n in values if n % 3 != 0 for y in (2 * n, -2 * n)]
    assert got == expected
    assert seen == expected  # the kit runs in this process: peek saw every value


@settings(max_examples=30)
@given(ints)
def test_branch_sends_each_value_to_the_first_predicate_that_holds(values: list[int]) -> None:
    def arm(i: int) -> list[int]:
        return run_stream(lambda s: s.branch(lambda n: n < 0, lambda n: n % 2 == 0, lambda n: True)[i], values)

    arms = [arm(i) for i in range(3)]
    assert arms[0] == [n for n in values if n < 0]
    assert arms[1] == [n for n in values if n >= 0 and n % 2 == 0]
    assert arms[2] == [n for n in values if n >= 0 and n % 2 == 1]


@settings(max_examples=30)
@given(words)
def test_count_by_key_ends_at_the_direct_count_per_key(values: list[str]) -> None:
    got = run_stream(lambda s: s.map_to_pair(lambda w: (w, 1)).count_by_key(), values)
    assert dict(got) == dict(Counter(values))  # the last update of each key is its count


@settings(max_examples=30)
@given(words)
def test_reduce_and_aggregate_by_key_end_at_the_direct_results(values: list[str]) -> None:
    lengths: dict[str, int] = defaultdict(int)
    for w in values:
        lengths[w[0]] += len(w)
    assert dict(run_stream(lambda s: s.map_to_pair(lambda w: (w[0], len(w))).reduce_by_key(lambda a, b: a + b), values)) == lengths
    got = dict(run_stream(lambda s: s.key_by(lambda w: w[0]).aggregate_by_key(0, lambda acc, w: acc + len(w), lambda a, b: a + b), values))
    assert got == lengths


@settings(max_examples=30)
@given(ints)
def test_global_aggregate_and_reduce_end_at_the_direct_result(values: list[int]) -> None:
    means = run_stream(lambda s: s.aggregate(Mean()), values)
    assert (means[-1] if means else None) == (sum(values) / len(values) if values else None)
    assert (run_stream(lambda s: s.reduce(max), values) or [None])[-1] == (max(values) if values else None)


@settings(max_examples=30)
@given(ints, st.integers(1, 5))
def test_tumbling_count_windows_reduce_each_window(values: list[int], n: int) -> None:
    w = TumblingWindows.of(Count(n)).with_idle_timeout(1.0)
    got = run_stream(lambda s: s.window(w).reduce(lambda a, b: a + b), values)
    assert got == [sum(values[i : i + n]) for i in range(0, len(values), n)]  # the last, partial window fires when the input idles


@settings(max_examples=20)
@given(ints)
def test_sliding_count_windows_aggregate_the_last_length_values_every_interval(values: list[int]) -> None:
    values = values[: len(values) // 2 * 2]  # whole intervals only (an idle flush fires what the engine still holds)
    w = SlidingWindows.of(Count(4), Count(2)).with_idle_timeout(1.0)
    got = run_stream(lambda s: s.window(w).reduce(lambda a, b: a + b), values)
    assert got == [sum(values[max(0, i - 4) : i]) for i in range(2, len(values) + 1, 2)]  # Storm's count window: the last 4 every 2


@settings(max_examples=20)
@given(words)
def test_windowed_group_by_key_and_count_by_key_per_window(values: list[str]) -> None:
    got = run_stream(lambda s: s.key_by(lambda w: w[0]).window(ALL).group_by_key(), values)
    direct: dict[str, list[str]] = defaultdict(list)
    for w in values:
        direct[w[0]].append(w)
    assert dict(got) == dict(direct)
    assert dict(run_stream(lambda s: s.map_to_pair(lambda w: (w, 1)).window(ALL).count_by_key(), values)) == Counter(values)


@settings(max_examples=20)
@given(ints)
def test_map_values_and_flat_map_values_keep_the_key(values: list[int]) -> None:
    got = run_stream(lambda s: s.key_by(lambda n: n % 2).map_values(abs).flat_map_values(lambda v: [v, v + 1]), values)
    assert got == [(n % 2, y) for n in values for y in (abs(n), abs(n) + 1)]


def _direct_join(left: list[tuple[str, int]], right: list[tuple[str, int]], how: str) -> Counter[Any]:
    lk: dict[str, list[int]] = defaultdict(list)
    rk: dict[str, list[int]] = defaultdict(list)
    for k, v in left:
        lk[k].append(v)
    for k, v in right:
        rk[k].append(v)
    out: Counter[Any] = Counter()
    for k in set(lk) | set(rk):
        ls, rs = lk.get(k), rk.get(k)
        if (ls is None and how in ("inner", "left")) or (rs is None and how in ("inner", "right")):
            continue
        for a in ls or [None]:  # type: ignore[list-item]
            for b in rs or [None]:  # type: ignore[list-item]
                out[(k, a, b)] += 1
    return out


@settings(max_examples=25)
@given(pairs, pairs, st.sampled_from(["join", "left_outer_join", "right_outer_join", "full_outer_join"]))
def test_windowed_joins_equal_the_direct_join(left: list[tuple[str, int]], right: list[tuple[str, int]], op: str) -> None:
    got = run_two(lambda ls, rs: getattr(ls.window(ALL), op)(rs), [list(p) for p in left], [list(p) for p in right])
    how = {"join": "inner", "left_outer_join": "left", "right_outer_join": "right", "full_outer_join": "full"}[op]
    assert Counter((k, v[0], v[1]) for k, v in got) == _direct_join(left, right, how)


@settings(max_examples=25)
@given(pairs, pairs)
def test_cogroup_by_key_gathers_both_sides_per_key(left: list[tuple[str, int]], right: list[tuple[str, int]]) -> None:
    got = run_two(lambda ls, rs: ls.window(ALL).cogroup_by_key(rs), [list(p) for p in left], [list(p) for p in right])
    keys = {k for k, _ in left} | {k for k, _ in right}
    assert {k: (sorted(a), sorted(b)) for k, (a, b) in got} == {
        k: (sorted(v for kk, v in left if kk == k), sorted(v for kk, v in right if kk == k)) for k in keys
    }


@settings(max_examples=20)
@given(words)
def test_update_state_by_key_keeps_a_running_state_per_key(values: list[str]) -> None:
    got = run_stream(lambda s: s.map_to_pair(lambda w: (w, len(w))).update_state_by_key(0, lambda acc, v: acc + v).to_pair_stream(), values)
    running: dict[str, int] = defaultdict(int)
    expected = []
    for w in values:
        running[w] += len(w)
        expected.append((w, running[w]))
    assert got == expected


def test_repartition_keeps_every_value() -> None:
    values = list(range(50))
    assert sorted(run_stream(lambda s: s.repartition(3).map(lambda n: n + 1), values)) == [n + 1 for n in values]
