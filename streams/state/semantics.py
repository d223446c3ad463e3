"""Trident's three state semantics over a :class:`~streams.state.backend.StateBackend`.

The update rules are pure functions of ``(stored row, txid, delta)``; the classes fold a
batch's updates per key and apply them in one database transaction with the txid.

Sources: Storm Trident ``TransactionalMap`` (``(txid, value)``: equal txid -> skip),
``OpaqueMap``/``OpaqueValue`` (``(txid, prev, curr)``: newer txid -> prev = curr and
curr = f(curr); equal -> curr = f(prev); older -> "batch is behind state"), and
``NonTransactionalMap`` (plain read-modify-write).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from typing_extensions import override

from streams.exceptions import BatchBehindStateError, StateFencedError
from streams.state.backend import StateBackend, StateTx

Combine = Callable[[Any, Any], Any]


class ApplyResult(NamedTuple):
    """What one :meth:`State.apply` did: keys ``written``, keys ``skipped`` (already at this txid)."""

    txid: int
    written: int
    skipped: int


def key_of(key: Any) -> str:
    """The stored form of a key: canonical JSON (lists and tuples alike), as ``json.dumps`` writes it.

    A plain ASCII string (the usual key: a word, a carrier) is quoted directly, byte-identical
    to ``json.dumps`` and a fifth of its time; anything else goes through ``json.dumps``.
    """
    if type(key) is str and key.isascii() and key.isprintable() and '"' not in key and "\\" not in key:
        return f'"{key}"'
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


def key_from(raw: str) -> Any:
    """A stored key back (a JSON list becomes a tuple, so it can be a dict key)."""
    key = json.loads(raw)
    return tuple(key) if isinstance(key, list) else key


def transactional_update(state: str, key: str, row: list[Any] | None, txid: int, delta: Any, combine: Combine) -> list[Any] | None:
    """``[txid, value]``: a new row, or None to skip (the batch is already in it).

    >>> transactional_update("s", "k", None, 1, 5, operator.add)
    [1, 5]
    >>> transactional_update("s", "k", [1, 5], 1, 5, operator.add) is None  # replayed txid
    True
    >>> transactional_update("s", "k", [1, 5], 2, 3, operator.add)
    [2, 8]

    Raises BatchBehindStateError when ``txid`` is older than the stored one.
    """
    if row is None:
        return [txid, delta]
    stored, value = row
    if txid == stored:
        return None
    if txid < stored:
        raise BatchBehindStateError(f"[{state}] batch {txid} is behind state: key {key} already holds txid {stored}")
    return [txid, combine(value, delta)]


def opaque_update(state: str, key: str, row: list[Any] | None, txid: int, delta: Any, combine: Combine) -> list[Any]:
    """``[txid, prev, curr]`` after applying ``delta`` at ``txid``.

    >>> opaque_update("s", "k", None, 1, 5, operator.add)
    [1, None, 5]
    >>> opaque_update("s", "k", [1, None, 5], 1, 7, operator.add)  # txid 1 again, other tuples
    [1, None, 7]
    >>> opaque_update("s", "k", [1, None, 7], 2, 3, operator.add)
    [2, 7, 10]

    Raises BatchBehindStateError when ``txid`` is older than the stored one.
    """
    if row is None:
        return [txid, None, delta]
    stored, prev, curr = row
    if txid > stored:
        return [txid, curr, combine(curr, delta)]
    if txid == stored:
        return [txid, prev, delta if prev is None else combine(prev, delta)]
    raise BatchBehindStateError(f"[{state}] batch {txid} is behind state: key {key} already holds txid {stored}")


class State:
    """A named state in a backend. Subclasses give the update rule.

    Args:
      backend: where it is stored.
      name: the state's name (unique per database; Squall uses ``<topology>.<name>``).
      combine: how a delta joins a value (default ``+``).
      writer: who commits (a committer task, ``<component>:<task index>``): its last txid
        and its commits are logged under this name.
      epoch: the committing worker's claim epoch (:mod:`streams.runtime.fencing`); with one
        (> 0), a commit after a newer owner of ``writer`` committed raises StateFencedError.
    Thread safety: as the backend (one connection per thread).
    """

    kind = "state"

    def __init__(self, backend: StateBackend, name: str, combine: Combine = operator.add, writer: str = "", epoch: int = 0) -> None:
        self.backend = backend
        self.name = name
        self.combine = combine
        self.writer = writer
        self.epoch = epoch

    def fold(self, updates: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
        """Combine ``(key, delta)`` pairs per key (keys in stored form)."""
        out: dict[str, Any] = {}
        combine = self.combine
        for key, delta in updates:
            k = key_of(key)
            out[k] = delta if k not in out else combine(out[k], delta)
        return out

    def _update(self, key: str, row: Any, txid: int, delta: Any) -> Any:
        raise NotImplementedError

    def apply(self, txid: int, updates: Iterable[tuple[Any, Any]]) -> ApplyResult:
        """Apply batch ``txid``'s ``(key, delta)`` updates (keys may repeat) in one database transaction, with ``txid`` as the state's last committed batch.

        Raises BatchBehindStateError (a replay of an older batch), StateFencedError (a newer
        owner of this writer committed: this one was replaced), StateError (the store).
        """
        return self.apply_folded(txid, self.fold(updates))

    def apply_folded(self, txid: int, folded: dict[str, Any]) -> ApplyResult:
        """:meth:`apply` for updates already folded by :meth:`fold`.

        A batch this writer already committed, arriving after a later one (a committer
        that restarted behind its input re-delivers it), changes nothing and logs no
        commit: every key counts as skipped. An older batch this writer never committed
        raises BatchBehindStateError.
        """
        written = skipped = 0
        with self.backend.transaction(self.name, self.writer) as tx:
            if self.epoch:  # the txid-and-epoch check: a replaced committer's late commit is refused
                owner = tx.claim(self.epoch)
                if owner > self.epoch:
                    raise StateFencedError(
                        f"[{self.name}] writer {self.writer} in epoch {self.epoch} was replaced: epoch {owner} committed as it; batch {txid} refused"
                    )
            last = tx.last_txid()
            if last is not None and txid < last and tx.committed(txid):
                return ApplyResult(txid, 0, len(folded))
            rows = tx.read(list(folded))
            new: dict[str, Any] = {}
            for k, delta in folded.items():
                row = self._update(k, rows.get(k), txid, delta)
                if row is None:
                    skipped += 1
                else:
                    new[k] = row
            if last is not None and txid < last:
                raise BatchBehindStateError(f"[{self.name}] batch {txid} is behind state: writer {self.writer} already committed txid {last}")
            if last == txid:
                self._replayed(tx, txid, folded)
            tx.write(txid, new)
            written = len(new)
            tx.commit(txid, written, skipped)
        return ApplyResult(txid, written, skipped)

    def _replayed(self, tx: StateTx, txid: int, folded: dict[str, Any]) -> None:
        """This writer applies ``txid`` again (a replayed commit); the default does nothing."""

    def value_of(self, row: Any) -> Any:
        """The current value held in a stored row."""
        return row

    def get(self, key: Any) -> Any:
        """The current value of ``key`` (None if absent)."""
        row = self.backend.get(self.name, key_of(key))
        return None if row is None else self.value_of(row)

    def items(self) -> dict[Any, Any]:
        """Every ``key -> current value``."""
        return {key_from(k): self.value_of(row) for k, row in self.backend.items(self.name)}

    def last_txid(self) -> int | None:
        """The last txid this writer committed (None before its first)."""
        return self.backend.last_txid(self.name, self.writer)

    def commits(self) -> list[tuple[str, int, int, int]]:
        """``(writer, txid, keys written, keys skipped)`` per commit of any writer, in commit order."""
        return self.backend.commits(self.name)


class TransactionalState(State):
    """``key -> (txid, value)`` (Trident ``TransactionalMap``).

    Exactly once only if every replay of a txid carries the same tuples (a transactional
    spout).
    """

    kind = "transactional"

    def _update(self, key: str, row: Any, txid: int, delta: Any) -> Any:
        return transactional_update(self.name, key, row, txid, delta, self.combine)

    @override
    def value_of(self, row: Any) -> Any:
        return row[1]


class OpaqueState(State):
    """``key -> (txid, prev, curr)`` (Trident ``OpaqueMap``).

    Exactly once even when a replayed txid carries other tuples (an opaque spout).

    One step beyond Trident: when a writer applies its last txid again, the keys its earlier
    attempt wrote that this attempt does not touch go back to ``prev`` (or away, if that
    attempt created them). Trident's OpaqueMap keeps them, so tuples that the replay left
    out (and that a later batch will carry) would count twice.
    """

    kind = "opaque"

    def _update(self, key: str, row: Any, txid: int, delta: Any) -> Any:
        return opaque_update(self.name, key, row, txid, delta, self.combine)

    def _replayed(self, tx: StateTx, txid: int, folded: dict[str, Any]) -> None:
        stale = [k for k in tx.keys_at(txid) if k not in folded]
        rows = tx.read(stale)
        gone = [k for k in stale if rows[k][1] is None]
        tx.delete(gone)
        tx.write(txid, {k: [txid, rows[k][1], rows[k][1]] for k in stale if rows[k][1] is not None})

    @override
    def value_of(self, row: Any) -> Any:
        return row[2]


class NonTransactionalState(State):
    """``key -> value`` with a plain read-modify-write (Trident ``NonTransactionalMap``).

    **A replayed batch is counted twice**: it ignores the txid. It exists to compare
    against; use it only for idempotent updates (``combine`` that keeps the last value).
    """

    kind = "non-transactional"

    def _update(self, key: str, row: Any, txid: int, delta: Any) -> Any:
        return delta if row is None else self.combine(row, delta)


STATE_KINDS: dict[str, type[State]] = {c.kind: c for c in (TransactionalState, OpaqueState, NonTransactionalState)}
