"""CompactTable against a dict model (hypothesis stateful-ish sequences)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acker.table import CompactTable

ops = st.lists(
    st.tuples(st.sampled_from(["put", "del"]), st.integers(1, 64) | st.integers(1, 2**64 - 1), st.integers(0, 2**64 - 1)),
    max_size=300,
)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_behaves_like_a_dict(seq: list[tuple[str, int, int]]) -> None:
    table = CompactTable()
    model: dict[int, int] = {}
    for op, root, val in seq:
        slot = table.find(root)
        assert (slot >= 0) == (root in model)
        if op == "put":
            if slot >= 0:
                table.vals[slot] = val
            else:
                table.insert(root, val, None, 0.0, 0)
            model[root] = val
        elif slot >= 0:
            table.delete(slot)
            del model[root]
        assert len(table) == len(model)
    assert {r: v for r, v, _, _, _ in table.items()} == model
    for root, val in model.items():
        assert table.vals[table.find(root)] == val


def test_task_and_start_ms_are_kept_per_row() -> None:
    table = CompactTable(epoch=1_800_000_000.0)
    row = table.insert(5, 1, 7, 1_800_000_000.123, 0)
    other = table.insert(6, 1, None, 1_799_999_990.5, 0)  # before the epoch: a negative offset
    assert table.task_at(row) == 7 and abs(table.start_at(row) - 1_800_000_000.123) < 0.001
    assert table.task_at(other) is None and abs(table.start_at(other) - 1_799_999_990.5) < 0.001
    table.set_task(other, 65533)
    assert table.task_at(other) == 65533
    with pytest.raises(ValueError, match="out of range"):
        table.set_task(other, 65534)
    with pytest.raises(ValueError, match="out of range"):
        table.insert(9, 1, -1, 0.0, 0)
    assert table.find(9) == -1 and len(table) == 2  # a refused insert leaves nothing behind


def test_a_start_beyond_24_days_is_clamped_not_wrapped() -> None:
    table = CompactTable(epoch=100.0)
    far = table.insert(5, 1, 0, 100.0 + 30 * 86400, 0)
    past = table.insert(6, 1, 0, 100.0 - 30 * 86400, 0)
    assert table.start_at(far) == 100.0 + (2**31 - 1) / 1000
    assert table.start_at(past) == 100.0 - (2**31 - 1) / 1000


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 2**64 - 1), unique=True, min_size=1, max_size=2000), st.data())
def test_rows_stay_dense_and_every_root_is_found_after_deletes(roots: list[int], data: st.DataObject) -> None:
    table = CompactTable()
    for n, root in enumerate(roots):
        table.insert(root, n, n % 3, float(n), 0)
    gone = data.draw(st.lists(st.sampled_from(roots), unique=True))
    for root in gone:
        table.delete(table.find(root))
    kept = [r for r in roots if r not in set(gone)]
    assert sorted(table.keys) == sorted(kept)  # no holes: the rows are exactly the live roots
    for root in kept:
        row = table.find(root)
        n = roots.index(root)
        assert table.keys[row] == root and table.vals[row] == n and table.task_at(row) == n % 3 and table.start_at(row) == float(n)
    assert sum(1 for slot in table.index if slot) == len(kept) and table.cap * 4 >= len(kept) * 5


def test_bytes_per_entry_at_any_size_from_a_thousand_to_a_million_is_at_most_40() -> None:
    import random

    table = CompactTable()
    rnd = random.Random(1)
    worst = 0.0
    for n in range(1, 1_000_001):
        table.insert(rnd.getrandbits(64) | 1, 1, 1, 0.0, 1)
        if n >= 1000 and n % 997 == 0:
            worst = max(worst, table.nbytes / n)
    assert worst <= 40, worst
