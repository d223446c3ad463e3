from __future__ import annotations

from collections import Counter

from streams.grouping import AllGrouping, FieldsGrouping, GlobalGrouping, ShuffleGrouping


def test_shuffle_is_balanced() -> None:
    g = ShuffleGrouping(4)
    counts = Counter(g.choose([i])[0] for i in range(4000))
    assert set(counts) == {0, 1, 2, 3} and set(counts.values()) == {1000}


def test_fields_same_values_same_task_and_spread() -> None:
    g = FieldsGrouping(5, [1])
    seen: dict[str, int] = {}
    for i in range(2000):
        word = f"w{i % 100}"
        (task,) = g.choose([i, word])
        assert seen.setdefault(word, task) == task
    assert len(set(seen.values())) == 5


def test_all_and_global() -> None:
    assert list(AllGrouping(3).choose(["x"])) == [0, 1, 2]
    assert list(GlobalGrouping().choose(["x"])) == [0]
