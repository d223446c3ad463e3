from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams import RetryPolicy
from streams.kafka.offsets import OffsetTracker
from streams.kafka.retry import RetryQueue


def test_commits_only_the_contiguous_run_of_finished_offsets() -> None:
    t = OffsetTracker(100)
    for off in (100, 101, 102, 105, 106):  # 103-104 are a gap (e.g. a transaction marker)
        t.emitted(off)
    assert t.committable == 100
    t.finished(101)
    t.finished(102)
    assert t.committable == 100  # 100 still in flight
    t.finished(100)
    assert t.committable == 105
    t.finished(106)
    assert t.committable == 105
    t.finished(105)
    assert t.committable == 107 and t.in_flight == 0


def test_replayed_offsets_are_not_tracked_twice() -> None:
    t = OffsetTracker(0)
    t.emitted(0)
    t.emitted(0)
    assert t.in_flight == 1


def test_exponential_backoff_with_injected_clock() -> None:
    now = [0.0]
    policy = RetryPolicy(initial_delay_s=0.5, multiplier=2.0, max_delay_s=3.0, max_retries=4)
    assert [policy.delay(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    q = RetryQueue(policy, clock=lambda: now[0])
    q.schedule("a", 1)
    q.schedule("b", 3)
    assert q.pop_due() is None
    now[0] = 0.5
    assert q.pop_due() == "a"
    now[0] = 1.9
    assert q.pop_due() is None
    now[0] = 2.0
    assert q.pop_due() == "b"
    assert not policy.exhausted(4) and policy.exhausted(5)


class Model:
    """The tracker's contract, one offset at a time: what is unfinished, and how far offsets were handed."""

    def __init__(self, start: int) -> None:
        self.unfinished: set[int] = set()
        self.next = start

    def committable(self) -> int:
        return min(self.unfinished, default=self.next)

    def ranges(self) -> list[tuple[int, int]]:
        done = [off for off in range(self.committable(), self.next) if off not in self.unfinished]
        out: list[tuple[int, int]] = []
        for off in done:
            if out and out[-1][1] == off:
                out[-1] = (out[-1][0], off + 1)
            else:
                out.append((off, off + 1))
        return out


@settings(max_examples=300, deadline=None)
@given(
    runs=st.lists(st.tuples(st.integers(1, 8), st.integers(0, 3), st.booleans()), min_size=1, max_size=15),
    skipped=st.sets(st.integers(0, 200)),
    order=st.randoms(use_true_random=False),
    fail=st.sets(st.integers(0, 15)),
)
def test_trees_as_one_entry_finish_and_commit_as_their_records_would(runs: list[tuple[int, int, bool]], skipped: set[int], order: Any, fail: set[int]) -> None:
    """Trees (some with skipped records inside and gaps after), records alone, trees split by a
    failure and finished record by record, in any order: the tracker commits and reports
    finished ranges exactly as a tracker of single offsets would."""
    t, model = OffsetTracker(5), Model(5)
    off = 5
    trees: list[tuple[int, ...]] = []
    for size, gap, alone in runs:
        handed = list(range(off, off + size))
        members = tuple(o for o in handed if o not in skipped) if size > 1 else tuple(handed)
        if alone or len(members) <= 1:
            for o in handed:
                t.emitted(o) if o in members else t.passed(o)
            trees += [(o,) for o in members]
        else:
            t.emitted_tree(members, handed[-1] + 1)
            trees.append(members)
        model.unfinished |= set(members)
        model.next = handed[-1] + 1
        off = handed[-1] + 1 + gap  # a gap: offsets the partition does not have
        assert (t.committable, t.finished_ranges(100), t.next) == (model.committable(), model.ranges(), model.next)
    steps: list[tuple[str, int]] = []
    for i, members in enumerate(trees):
        if i in fail and len(members) > 1:
            steps.append(("split", members[0]))
            steps += [("one", o) for o in members]
        else:
            steps.append(("tree", members[0]) if len(members) > 1 else ("one", members[0]))
    order.shuffle(steps)
    for kind, o in steps:  # a split after its members finished alone is a no-op: those were finished alone
        if kind == "split":
            t.split(o)
            continue
        if kind == "tree":
            t.finished_tree(o)
            model.unfinished -= set(next(m for m in trees if m[0] == o))
        else:
            t.finished(o)
            model.unfinished.discard(o)
        assert (t.committable, t.finished_ranges(100), t.in_flight) == (model.committable(), model.ranges(), len(model.unfinished))
    assert t.committable == model.next and t.in_flight == 0


def test_a_tree_is_tracked_from_above_the_last_offset_only() -> None:
    t = OffsetTracker(0)
    t.emitted_tree((0, 1, 2), end=3)
    with pytest.raises(ValueError, match=r"offsets 2\.\.3 must lie in \[3, 4\)"):
        t.emitted_tree((2, 3), end=4)
    with pytest.raises(ValueError, match=r"offsets 3\.\.5 must lie in \[3, 5\)"):
        t.emitted_tree((3, 5), end=5)
