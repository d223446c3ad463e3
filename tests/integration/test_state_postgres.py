"""The state semantics on a real PostgreSQL (the same properties as tests/unit/test_state.py,
which run on SQLite): replays never change the result; a batch is one transaction."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.exceptions import BatchBehindStateError
from streams.state import OpaqueState, TransactionalState, open_backend

BATCH = st.lists(st.tuples(st.sampled_from(["a", "b", "c", ("x", 1)]), st.integers(-5, 20)), max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attempts=st.lists(st.lists(BATCH, min_size=1, max_size=3), min_size=1, max_size=6))
def test_opaque_and_transactional_replays_end_as_a_clean_run(postgres_url: str, attempts: list[list[list[tuple[object, int]]]]) -> None:
    backend = open_backend(postgres_url)
    name = f"t{uuid.uuid4().hex[:8]}"
    clean, replayed = OpaqueState(backend, name + ".clean", writer="w"), OpaqueState(backend, name + ".replayed", writer="w")
    tclean, treplayed = TransactionalState(backend, name + ".tclean", writer="w"), TransactionalState(backend, name + ".treplayed", writer="w")
    for txid, tries in enumerate(attempts, start=1):
        clean.apply(txid, tries[-1])
        tclean.apply(txid, tries[0])
        for updates in tries:
            replayed.apply(txid, updates)
            treplayed.apply(txid, tries[0])  # transactional: a replay carries the same tuples
    assert replayed.items() == clean.items()
    assert treplayed.items() == tclean.items()


def test_a_batch_behind_state_is_refused_and_a_failed_batch_leaves_nothing(postgres_url: str) -> None:
    backend = open_backend(postgres_url)
    s = TransactionalState(backend, f"t{uuid.uuid4().hex[:8]}.counts", writer="count:1")
    s.apply(3, [("a", 1)])
    with pytest.raises(BatchBehindStateError, match=r"batch 2 is behind state: key \"a\" already holds txid 3"):
        s.apply(2, [("b", 1), ("a", 1)])
    assert s.items() == {"a": 1} and s.last_txid() == 3 and s.commits() == [("count:1", 3, 1, 0)]


def test_a_committed_batch_redelivered_after_a_later_one_changes_nothing(postgres_url: str) -> None:
    backend = open_backend(postgres_url)
    for cls in (TransactionalState, OpaqueState):
        s = cls(backend, f"t{uuid.uuid4().hex[:8]}.counts", writer="count:1")
        s.apply(1, [("a", 1)])
        s.apply(2, [("b", 1)])
        assert s.apply(1, [("a", 1)]) == (1, 0, 1)
        assert s.items() == {"a": 1, "b": 1} and s.last_txid() == 2
        assert s.commits() == [("count:1", 1, 1, 0), ("count:1", 2, 1, 0)]
