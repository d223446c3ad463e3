from __future__ import annotations

from collections import Counter

from streams.model.grouping import AllGrouping, FieldsGrouping, GlobalGrouping, ShuffleGrouping


def test_shuffle_is_balanced() -> None:
    g = ShuffleGrouping(4)
    counts = Counter(g.choose([i])[0] for i in range(4000))
    assert set(counts) == {0, 1, 2, 3} and set(counts.values()) == {1000}


def test_shuffle_is_round_robin_over_one_random_order_as_storm_2() -> None:
    g = ShuffleGrouping(5)
    chosen = [g.choose(["x"])[0] for _ in range(50)]
    cycle = chosen[:5]
    assert sorted(cycle) == [0, 1, 2, 3, 4]  # every task once a cycle
    assert chosen == cycle * 10  # the same order every cycle: drawn once, not per cycle
    starts = {ShuffleGrouping(5).choose(["x"])[0] for _ in range(200)}
    assert starts == {0, 1, 2, 3, 4}  # emitting tasks start their cycles at random tasks
    assert ShuffleGrouping(1).choose(["x"]) == (0,)


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


def test_fields_hash_is_documented_and_stable_across_instances() -> None:
    import zlib

    from streams.wire.codec import encode_json

    a, b = FieldsGrouping(7, [0]), FieldsGrouping(7, [0])
    for word in ["the", "naïve", "", "x" * 100]:
        assert a.choose([word]) == b.choose([word]) == (zlib.crc32(word.encode()) % 7,)
        assert a.choose([word]) == a.choose([word])  # memoised answer is the same
    assert a.choose([42]) == (zlib.crc32(encode_json([42])) % 7,)  # non-strings: the JSON array
    two = FieldsGrouping(7, [0, 1])
    assert two.choose(["a", 1]) == (zlib.crc32(encode_json(["a", 1])) % 7,)
    small = FieldsGrouping(3, [0])
    small.CACHE_SIZE = 2
    for word in ["a", "b", "c", "d"]:
        assert small.choose([word]) == (zlib.crc32(word.encode()) % 3,)
    assert len(small._cache) <= 2  # bounded
