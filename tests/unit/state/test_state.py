"""Trident's state semantics (streams.state): replays never change the result."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.exceptions import BatchBehindStateError, StateError, StateFencedError
from streams.state import NonTransactionalState, OpaqueState, TransactionalState, open_backend
from streams.state.semantics import State, key_of

KEYS = st.sampled_from(["a", "b", "c", ("x", 1)])
BATCH = st.lists(st.tuples(KEYS, st.integers(-5, 20)), max_size=6)


def fresh(cls: type[State]) -> State:
    return cls(open_backend("memory://"), "s", writer="w")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(BATCH, st.integers(0, 3)), min_size=1, max_size=8))
def test_transactional_replays_of_a_batch_change_nothing(batches: list[tuple[list[tuple[object, int]], int]]) -> None:
    """A txid replayed any number of times (same tuples, as a transactional spout does)
    ends where one clean run ends."""
    clean, replayed = fresh(TransactionalState), fresh(TransactionalState)
    for txid, (updates, replays) in enumerate(batches, start=1):
        clean.apply(txid, updates)
        for _ in range(1 + replays):
            replayed.apply(txid, updates)
    assert replayed.items() == clean.items()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(BATCH, min_size=1, max_size=4), min_size=1, max_size=8))
def test_opaque_replays_that_differ_end_as_the_last_attempts_alone(attempts: list[list[list[tuple[object, int]]]]) -> None:
    """Each txid applied once per attempt, attempts differing (an opaque spout): the result
    is that of a clean run of each txid's last attempt."""
    clean, replayed = fresh(OpaqueState), fresh(OpaqueState)
    for txid, tries in enumerate(attempts, start=1):
        clean.apply(txid, tries[-1])
        for updates in tries:
            replayed.apply(txid, updates)
    assert replayed.items() == clean.items()


def test_non_transactional_counts_a_replay_twice() -> None:
    s = fresh(NonTransactionalState)
    s.apply(1, [("a", 2)])
    s.apply(1, [("a", 2)])  # the same batch replayed
    assert s.get("a") == 4


def test_an_older_txid_is_refused_naming_the_state_key_and_both_txids() -> None:
    for cls in (TransactionalState, OpaqueState):
        s = fresh(cls)
        s.apply(5, [("a", 1)])
        with pytest.raises(BatchBehindStateError, match=r'\[s\] batch 4 is behind state: key "a" already holds txid 5'):
            s.apply(4, [("a", 1)])


def test_a_batch_is_one_database_transaction_with_its_txid(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'st.db'}"
    s = TransactionalState(open_backend(url), "t.counts", writer="count:0")

    def broken() -> object:
        yield ("a", 1)
        raise RuntimeError("the committer died mid-batch")

    s.apply(1, [("a", 1), ("b", 2)])
    with pytest.raises(RuntimeError):
        s.apply(2, broken())  # type: ignore[arg-type]
    again = TransactionalState(open_backend(url), "t.counts", writer="count:0")  # another process
    assert again.items() == {"a": 1, "b": 2} and again.last_txid() == 1
    assert again.commits() == [("count:0", 1, 2, 0)]


def test_unknown_state_store_is_named() -> None:
    with pytest.raises(StateError, match="unknown state store 'redis://x'"):
        open_backend("redis://x")


def test_keys_round_trip_as_json() -> None:
    s = fresh(OpaqueState)
    s.apply(1, [(k, 1) for k in ["w", 3, ("a", "b")]])
    assert s.items() == {"w": 1, 3: 1, ("a", "b"): 1}
    assert list(itertools.islice(s.commits(), 1)) == [("w", 1, 3, 0)]


@settings(max_examples=100, deadline=None)
@given(st.lists(BATCH, min_size=2, max_size=6), st.data())
def test_a_committed_batch_redelivered_after_a_later_one_changes_nothing(batches: list[list[tuple[object, int]]], data: st.DataObject) -> None:
    """A committer that restarts behind its input commits an old batch again after a
    later one (the kill -9 chaos test): values, last txid and commit log stay as they were,
    whether or not the later batch touched the same keys."""
    for cls in (TransactionalState, OpaqueState):
        s = fresh(cls)
        for txid, updates in enumerate(batches, start=1):
            s.apply(txid, updates)
        before = (s.items(), s.last_txid(), s.commits())
        old = data.draw(st.integers(1, len(batches) - 1))
        assert s.apply(old, batches[old - 1]) == (old, 0, len(s.fold(batches[old - 1])))
        assert (s.items(), s.last_txid(), s.commits()) == before


def test_an_older_batch_never_committed_is_refused_even_on_fresh_keys() -> None:
    for cls in (TransactionalState, OpaqueState):
        s = fresh(cls)
        s.apply(1, [("a", 1)])
        s.apply(3, [("a", 1)])
        with pytest.raises(BatchBehindStateError, match=r"\[s\] batch 2 is behind state: writer w already committed txid 3"):
            s.apply(2, [("b", 1)])
        assert s.items() == {"a": 2} and s.last_txid() == 3


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), BATCH), min_size=1, max_size=12))
def test_a_commit_from_an_older_owner_of_a_writer_is_refused_and_changes_nothing(commits: list[tuple[int, list[tuple[object, int]]]]) -> None:
    """The txid-and-epoch check (issue 29): owners of one writer with claim epochs 1-4 commit in
    any order; a commit is refused (StateFencedError) exactly when a newer epoch committed
    before it, and then the state is as it was."""
    backend = open_backend("memory://")
    newest = 0
    for txid, (epoch, updates) in enumerate(commits, start=1):
        s = OpaqueState(backend, "s", writer="count:0", epoch=epoch)
        before = (s.items(), s.commits())
        if epoch < newest:
            with pytest.raises(StateFencedError, match=rf"\[s\] writer count:0 in epoch {epoch} was replaced: epoch {newest} committed as it"):
                s.apply(txid, updates)
            assert (s.items(), s.commits()) == before
        else:
            s.apply(txid, updates)
            newest = epoch
    assert OpaqueState(backend, "s", writer="count:0").apply(len(commits) + 1, [("a", 1)]).written == 1  # epoch 0: not checked


@settings(max_examples=400, deadline=None)
@given(
    key=st.one_of(
        st.text(max_size=12), st.text(alphabet=st.characters(max_codepoint=127), max_size=12), st.integers(), st.tuples(st.text(max_size=3), st.integers())
    )
)
def test_a_keys_stored_form_is_what_json_dumps_writes_whatever_the_key(key: object) -> None:
    """The plain-ASCII fast path of key_of never changes a stored key: states written before it are read the same."""
    assert key_of(key) == json.dumps(key, sort_keys=True, separators=(",", ":"))


def test_an_opaque_replay_of_the_last_batch_finds_the_keys_it_wrote_without_an_index(tmp_path: Path) -> None:
    """keys_at scans the state (the (name, writer, txid) index is gone, and dropped from older files)."""
    import sqlite3

    path = tmp_path / "s.db"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE squall_state (name TEXT NOT NULL, key TEXT NOT NULL, writer TEXT NOT NULL, "
        "txid INTEGER NOT NULL, value TEXT NOT NULL, PRIMARY KEY (name, key))"
    )
    db.execute("CREATE INDEX squall_state_by_txid ON squall_state (name, writer, txid)")  # as files made before held it
    db.commit()
    db.close()
    s = OpaqueState(open_backend(f"sqlite:///{path}"), "t.counts", writer="count:0")
    s.apply(1, [("a", 1), ("b", 1)])
    s.apply(2, [("a", 1), ("c", 5)])
    s.apply(2, [("a", 1)])  # the replay leaves "c" out: it goes back to before batch 2
    assert s.items() == {"a": 2, "b": 1}
    names = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "squall_state_by_txid" not in names
