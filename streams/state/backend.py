"""What a state store is: the tables and the interfaces SQLite and PostgreSQL implement.

Both keep three tables, shared by every state of a database (``name`` tells them apart):

=========================  ==============================================================
``squall_state``           ``(name, key) -> (writer, txid, value)``: key is canonical JSON, value
                           is JSON (``[txid, value]``, ``[txid, prev, curr]`` or a plain value);
                           ``writer`` and ``txid`` say who last wrote it in which batch
``squall_state_txid``      ``(name, writer) -> txid``: the last batch each writer (a committer
                           task) committed into that state
``squall_state_commits``   one row per :meth:`StateTx.commit`: ``(seq, name, writer, txid,
                           written, skipped)``, in commit order (what a committer did, when)
``squall_state_owner``     ``(name, writer) -> epoch``: the newest claim epoch that committed as
                           that writer (:meth:`StateTx.claim`; :mod:`streams.runtime.fencing`)

``squall_kv``              ``(name, task, key) -> value``: a stateful bolt task's
                           ``KeyValueState`` (:mod:`streams.state.keyvalue`), key and value JSON
``squall_kv_applied``      ``(name, task, checkpoint, source) -> (at, max_offset, ids)``: the tuple
                           ids a stateful task applied, per checkpoint (written at ``at``) and
                           source partition (packed offsets, then paths), until they are
                           forgotten (:class:`streams.state.keyvalue.AppliedIds`)
=========================  ==============================================================

A batch's reads and writes and its txid go into one database transaction
(:meth:`StateBackend.transaction`), so a crash leaves all of a batch or none of it.

The two implementations: :mod:`streams.state.sqlite` and :mod:`streams.state.postgres`;
:func:`streams.state.stores.open_backend` picks one by URL. Stateful bolts need only the
:class:`KvStore` part, which a compacted changelog topic also provides
(:mod:`streams.kafka.changelog_store`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class KvSnapshot:
    """What :meth:`StateBackend.kv_load` returns.

    ``values`` (key -> value, JSON texts), ``applied`` (``(checkpoint, at, source, max
    offset, packed ids)`` rows, oldest checkpoint first) and ``checkpoint`` (0 before the first).
    """

    values: dict[str, str] = field(default_factory=dict)
    applied: list[tuple[int, float, int, int, bytes]] = field(default_factory=list)
    checkpoint: int = 0


@dataclass
class KvCommit:
    """One checkpoint of a stateful task (:meth:`StateBackend.kv_commit`).

    ``checkpoint``: its number; ``at``: when (seconds since the epoch); ``upserts``/``deletes``:
    keys changed since the last one (JSON texts); ``applied``: ``source -> (max offset, packed
    ids)`` of the tuples applied since; ``forget_upto``: applied-id rows of checkpoints up to
    this number go (0: none).
    """

    checkpoint: int
    at: float = 0.0
    upserts: dict[str, str] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)
    applied: dict[int, tuple[int, bytes]] = field(default_factory=dict)
    forget_upto: int = 0


class StateTx(ABC):
    """One batch's database transaction on one state (``name``), by one ``writer``."""

    @abstractmethod
    def read(self, keys: list[str]) -> dict[str, Any]:
        """The stored JSON values of ``keys`` (absent keys are left out); rows are locked for the rest of the transaction where the database supports it."""

    @abstractmethod
    def write(self, txid: int, rows: dict[str, Any]) -> None:
        """Insert or replace ``key -> value`` rows (values are JSON-serialisable), written by this writer in batch ``txid``."""

    @abstractmethod
    def delete(self, keys: list[str]) -> None:
        """Remove ``keys``."""

    @abstractmethod
    def last_txid(self) -> int | None:
        """The last txid this writer committed (None before its first)."""

    @abstractmethod
    def keys_at(self, txid: int) -> list[str]:
        """The keys this writer last wrote in batch ``txid``.

        A scan of the state's rows (no index serves it: one would cost every write more); only
        an opaque replay of the writer's last batch asks.
        """

    @abstractmethod
    def committed(self, txid: int) -> bool:
        """Whether this writer's commit log holds batch ``txid``."""

    @abstractmethod
    def commit(self, txid: int, written: int, skipped: int) -> None:
        """Record ``txid`` as the writer's last committed batch and log the commit."""

    @abstractmethod
    def claim(self, epoch: int) -> int:
        """Record ``epoch`` as this writer's owner unless a newer one is; return the owner's epoch after that (larger than ``epoch``: this writer was replaced).

        The owner row stays locked until the transaction ends, so an old and a new owner take turns.
        """


class KvStore(ABC):
    """Where stateful bolt tasks keep their checkpoints (:class:`streams.state.keyvalue.Checkpointer`).

    A :class:`StateBackend` (SQLite, PostgreSQL) is one; so is a compacted changelog topic
    (:mod:`streams.kafka.changelog_store`, ``kafka://``), which needs no database.
    Raises :class:`StateError` naming the store when it cannot be reached.
    """

    url: str

    @abstractmethod
    def kv_load(self, name: str, task: int) -> KvSnapshot:
        """A stateful task's last checkpoint: its ``key -> value`` (JSON texts), applied ids and checkpoint number."""

    @abstractmethod
    def kv_commit(self, name: str, task: int, commit: KvCommit) -> None:
        """Write one checkpoint of a stateful task atomically (all of it or nothing)."""

    @abstractmethod
    def kv_items(self, name: str) -> Iterator[tuple[int, str, str]]:
        """``(task, key, value)`` of every task of state ``name`` (JSON texts)."""

    @abstractmethod
    def close(self) -> None:
        """Release connections and clients."""


class StateBackend(KvStore):
    """A database holding states.

    Safe to share between threads (each thread gets its own connection); picklable (it
    reconnects from its URL), so Spark tasks can carry it.

    Raises :class:`StateError` naming the store when it cannot be reached.
    """

    url: str

    @abstractmethod
    def transaction(self, name: str, writer: str = "") -> Any:
        """A context manager yielding a :class:`StateTx`; commits on exit, rolls back on error."""

    @abstractmethod
    def get(self, name: str, key: str) -> Any | None:
        """The stored JSON value of ``key`` (None if absent)."""

    @abstractmethod
    def items(self, name: str) -> Iterator[tuple[str, Any]]:
        """Every ``(key, value)`` of state ``name``."""

    @abstractmethod
    def last_txid(self, name: str, writer: str | None = None) -> int | None:
        """The last txid ``writer`` (any writer: the highest) committed into ``name`` (None before the first)."""

    @abstractmethod
    def commits(self, name: str) -> list[tuple[str, int, int, int]]:
        """``(writer, txid, written, skipped)`` of every commit into ``name``, in commit order."""

    @abstractmethod
    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""
