"""A stateful task's applied tuple ids (streams.state.keyvalue.AppliedIds): exact, restorable, 8 bytes per packed id."""

from __future__ import annotations

import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.state import open_backend
from streams.state.keyvalue import AppliedIds, Checkpointer, KeyValueState

TID = st.tuples(st.integers(0, 3), st.integers(0, (1 << 34)), st.integers(0, (1 << 32) - 1))
"""(source, offset, path): offsets past 2**32 put one source's ids in two runs."""

STEP = st.one_of(
    st.tuples(st.just("add"), st.lists(TID, max_size=8)),
    st.tuples(st.just("checkpoint"), st.floats(0, 40)),
    st.tuples(st.just("rollback"), st.none()),
    st.tuples(st.just("forget"), st.integers(0, 1 << 35)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(STEP, max_size=40), st.integers(1, 6), st.floats(1, 60))
def test_applied_ids_answer_as_a_set_would_through_seals_rollbacks_forgets_and_a_restore(steps: list[tuple[str, object]], seal_ids: int, seal_s: float) -> None:
    """The model: a set of durable ids per checkpoint plus the pending ones. ``add`` says False
    exactly for ids the model holds; a rollback drops the pending; a forget drops whole
    checkpoints, oldest first, never a pending id and never one a younger checkpoint kept; a
    restore from the store gives back the same answers."""
    now = [1000.0]
    backend = open_backend("memory://")
    cp = Checkpointer(backend, "t.count", 0, clock=lambda: now[0])
    applied, state = AppliedIds(seal_ids=seal_ids, seal_s=seal_s), KeyValueState()
    durable: dict[int, set[tuple[int, int, int]]] = {}
    pending: set[tuple[int, int, int]] = set()
    forget_upto = 0
    for op, arg in steps:
        if op == "add":
            assert isinstance(arg, list)
            for tid in arg:
                held = tid in pending or any(tid in ids for ids in durable.values())
                assert applied.add(tid) is (not held)
                if not held:
                    pending.add(tid)
        elif op == "checkpoint":
            assert isinstance(arg, float)
            now[0] += arg
            number = cp.commit(state, applied, forget_upto)
            if pending:
                durable[number] = set(pending)
            pending = set()
        elif op == "rollback":
            applied.forget_pending()
            pending = set()
        else:
            assert isinstance(arg, int)
            gone = applied.forget(dict.fromkeys(range(4), arg), before=now[0] + 1)
            kept = set(applied.checkpoints())
            assert all(c > gone for c in kept)
            for c in [c for c in durable if c <= gone]:
                assert max(o for _, o, _ in durable[c]) < arg
                del durable[c]
            forget_upto = max(forget_upto, gone)
        every = pending | {t for ids in durable.values() for t in ids}
        assert len(applied) == len(every)
        assert all(t in applied for t in every)
    cp.commit(state, applied, forget_upto)
    if pending:
        durable[cp.checkpoint] = set(pending)
    again = AppliedIds(seal_ids=seal_ids, seal_s=seal_s)
    Checkpointer(backend, "t.count", 0).restore(again)
    restored = {t for ids in durable.values() for t in ids}
    assert len(again) == len(restored)
    assert all(t in again and not again.add(t) for t in restored)


def test_packed_ids_take_eight_bytes_each() -> None:
    """A word count's shape (several words per line, one source partition): once packed, what the
    ids hold, as tracemalloc counts every allocation still alive, is at most 8 bytes per id plus
    a constant (in the dict they took ~90)."""
    tracemalloc.start()
    try:
        applied = AppliedIds(seal_ids=10**9, seal_s=10**9)
        n = 0
        for offset in range(60_000):
            for path in range(offset % 5 + 1):
                applied.add((3, 1_000_000 + offset, path * 2654435761 & 0xFFFFFFFF))
                n += 1
        applied.clear_pending(1, 0.0)
        in_dict = tracemalloc.get_traced_memory()[0]
        applied.seal_ids = 0
        applied.clear_pending(2, 1.0)  # nothing new: packs the dict
        packed = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(applied.segments) == 1 and len(applied) == n == applied.segments[0].nbytes() // 8
    assert (3, 1_000_000, 0) in applied and (3, 1_000_000, 1) not in applied
    assert in_dict > 50 * n, f"{in_dict / n:.1f} B per id in the dict"
    assert packed <= 8 * n + 8192, f"{packed / n:.2f} B per id packed"


def test_a_restore_packs_as_it_reads_and_never_forgets_a_pending_id() -> None:
    """Rows read back at start-up go into segments of ``seal_ids`` ids (a restart after ten minutes
    at full speed does not hold them all in a dict); ids applied after the restore stay unpacked
    until a checkpoint covers them."""
    backend = open_backend("memory://")
    now = [0.0]
    cp = Checkpointer(backend, "t.count", 0, clock=lambda: now[0])
    applied, state = AppliedIds(seal_ids=10**9, seal_s=10**9), KeyValueState()
    for c in range(10):
        for i in range(100):
            applied.add((0, c * 100 + i, 1))
        now[0] += 1
        cp.commit(state, applied)
    again = AppliedIds(seal_ids=250, seal_s=10**9)
    Checkpointer(backend, "t.count", 0).restore(again)
    assert [(s.first, s.last) for s in again.segments] == [(1, 3), (4, 6), (7, 9), (10, 10)]
    assert len(again) == 1000 and (0, 999, 1) in again and (0, 1000, 1) not in again
    assert again.add((0, 1000, 1))
    assert again.forget({0: 10**6}, before=100.0) == 10 and len(again) == 1
    assert (0, 1000, 1) in again
