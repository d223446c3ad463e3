"""CompactTable against a dict model (hypothesis stateful-ish sequences)."""

from __future__ import annotations

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
                table.insert(root, val, 0, 0)
            model[root] = val
        elif slot >= 0:
            table.delete_slot(slot)
            del model[root]
        assert len(table) == len(model)
    assert {r: v for r, v, _, _ in table.items()} == model
    for root, val in model.items():
        assert table.vals[table.find(root)] == val


def test_meta_packs_task_and_start_ms() -> None:
    meta = CompactTable.pack_meta(7, 1_800_000_000.123)
    assert CompactTable.task_of(meta) == 7
    assert abs(CompactTable.start_of(meta) - 1_800_000_000.123) < 0.001
    assert CompactTable.task_of(CompactTable.pack_meta(None, 1.0)) is None


def test_bytes_per_entry_at_a_million_is_under_100() -> None:
    import random

    table = CompactTable()
    rnd = random.Random(1)
    for _ in range(1_000_000):
        table.insert(rnd.getrandbits(64) | 1, 1, 1, 1)
    assert table.nbytes / len(table) <= 100
