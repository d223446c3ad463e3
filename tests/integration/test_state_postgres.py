"""The state semantics on a real PostgreSQL (the same properties as tests/unit/test_state.py,
which run on SQLite): replays never change the result; a batch is one transaction."""

from __future__ import annotations

import contextlib
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.exceptions import BatchBehindStateError, StateFencedError
from streams.state import OpaqueState, TransactionalState, open_backend
from streams.state.postgres import READ_KEYS
from streams.state.semantics import key_of

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


def test_a_committer_that_vanished_mid_batch_frees_its_rows_for_its_replacement(postgres_url: str) -> None:
    """A committer cut off from the database inside a batch's transaction held its rows locked
    (FOR UPDATE) until TCP noticed, hours later, and its replacement waited on them (a host cut
    off for good: tests/integration/test_multihost.py). The server now ends a session idle in a
    transaction after IDLE_IN_TRANSACTION_S, and the replacement's batch commits."""
    import threading
    import time

    from streams.state.postgres import IDLE_IN_TRANSACTION_S

    name = f"t{uuid.uuid4().hex[:8]}.counts"
    TransactionalState(open_backend(postgres_url), name, writer="count:1").apply(1, [("a", 1)])
    zombie = open_backend(postgres_url)
    lost = zombie.transaction(name, "count:1")  # the old committer: inside its transaction, then gone
    tx = lost.__enter__()
    assert len(tx.keys_at(1)) == 1  # its row is now locked FOR UPDATE
    done: list[float] = []

    def replacement() -> None:
        start = time.monotonic()
        TransactionalState(open_backend(postgres_url), name, writer="count:1").apply(2, [("a", 1)])
        done.append(time.monotonic() - start)

    t = threading.Thread(target=replacement, daemon=True)
    t.start()
    t.join(IDLE_IN_TRANSACTION_S + 20)
    assert done, "the replacement still waits on the vanished committer's locks"
    assert IDLE_IN_TRANSACTION_S - 1 <= done[0] <= IDLE_IN_TRANSACTION_S + 20  # it waited for the server to end the lost session
    assert TransactionalState(open_backend(postgres_url), name, writer="count:1").items() == {"a": 2}
    with contextlib.suppress(Exception):  # the server ended the lost session: its rollback fails
        lost.__exit__(None, None, None)


def test_a_replaced_committers_late_commits_are_refused_by_the_txid_and_epoch_check(postgres_url: str) -> None:
    """Issue 29: a committer on a host cut off mid-run comes back after its replacement (a newer
    claim epoch) committed as the same writer. Its late commit is refused, whatever its txid
    and its keys, on both state kinds, and leaves the state as the replacement left it."""
    for cls in (TransactionalState, OpaqueState):
        name = f"t{uuid.uuid4().hex[:8]}.counts"
        zombie = cls(open_backend(postgres_url), name, writer="count:1", epoch=1_000)
        zombie.apply(1, [("a", 1)])  # before the cut
        replacement = cls(open_backend(postgres_url), name, writer="count:1", epoch=2_000)
        replacement.apply(2, [("a", 1), ("b", 1)])
        replacement.apply(3, [("c", 1)])
        before = (replacement.items(), replacement.last_txid(), replacement.commits())
        for txid, updates in ((3, [("a", 5), ("z", 9)]), (4, [("z", 1)]), (2, [("b", 7)])):  # the same txid, the next one, an older one
            with pytest.raises(StateFencedError, match=r"writer count:1 in epoch 1000 was replaced: epoch 2000 committed as it"):
                zombie.apply(txid, updates)
        assert (replacement.items(), replacement.last_txid(), replacement.commits()) == before
        assert before[:2] == ({"a": 2, "b": 1, "c": 1}, 3)
        cls(open_backend(postgres_url), name, writer="count:1", epoch=3_000).apply(4, [("d", 1)])  # a later owner goes on
        assert replacement.items() == {"a": 2, "b": 1, "c": 1, "d": 1}


def test_a_batch_reads_its_keys_through_the_primary_key_however_large_the_state(postgres_url: str) -> None:
    """A batch's read of its keys is an index lookup per key, not a scan of the whole state.

    Before: ``WHERE name = %s AND key = ANY(%s)`` on a table whose statistics were young (no
    ANALYZE yet) was planned as a scan of every row of the state, each checked against the
    whole key array, so commits slowed as the state grew (``python -m bench state``: 107 -> 283
    ms a batch). Its plan must probe the primary key with each key and visit no row of the
    state the batch does not touch.
    """
    import psycopg

    backend = open_backend(postgres_url)
    name = f"t{uuid.uuid4().hex[:8]}.counts"
    s = TransactionalState(backend, name, writer="count:1")
    for txid in range(1, 6):  # 20,000 keys in 5 batches, every key rewritten: dead row versions too
        s.apply(txid, [(f"w{i}", 1) for i in range(20_000)])
    keys = [key_of(f"w{i}") for i in range(0, 20_000, 40)]  # 500 keys, as stored
    with psycopg.connect(postgres_url, autocommit=True) as conn, conn.transaction():
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN (ANALYZE, FORMAT TEXT) " + READ_KEYS,
                (keys, name),
            ).fetchall()
        )
    assert "squall_state_pkey" in plan, plan
    assert "Rows Removed by Filter" not in plan, plan
    with backend.transaction(name, "count:1") as tx:  # the read itself returns exactly the keys asked for
        rows = tx.read(keys)
    assert sorted(rows) == sorted(keys) and all(row == [5, 5] for row in rows.values())
