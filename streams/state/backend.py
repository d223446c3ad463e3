"""Where state lives: SQLite (the embedded default, one file on disk) or PostgreSQL.

Both keep three tables, shared by every state of a database (``name`` tells them apart):

=========================  ==============================================================
``squall_state``           ``(name, key) -> (writer, txid, value)``: key is canonical JSON, value
                           is JSON (``[txid, value]``, ``[txid, prev, curr]`` or a plain value);
                           ``writer`` and ``txid`` say who last wrote it in which batch
``squall_state_txid``      ``(name, writer) -> txid``: the last batch each writer (a committer
                           task) committed into that state
``squall_state_commits``   one row per :meth:`StateTx.commit`: ``(seq, name, writer, txid,
                           written, skipped)``, in commit order (what a committer did, when)

``squall_kv``              ``(name, task, key) -> value``: a stateful bolt task's
                           ``KeyValueState`` (:mod:`streams.state.keyvalue`), key and value JSON
``squall_kv_applied``      ``(name, task, checkpoint, source) -> (at, max_offset, ids)``: the tuple
                           ids a stateful task applied, per checkpoint (written at ``at``) and
                           source partition (packed ``(offset, path)`` pairs), until they are
                           forgotten (:class:`streams.state.keyvalue.AppliedIds`)
=========================  ==============================================================

A batch's reads and writes and its txid go into one database transaction
(:meth:`StateBackend.transaction`), so a crash leaves all of a batch or none of it.

URLs (``squall.state.url``): ``sqlite:///absolute/path.db``, ``sqlite://relative.db``,
``postgresql://user@host:5432/db`` (psycopg 3: the ``postgres`` extra), ``memory://``
(SQLite in memory, one per backend object: tests and examples).

>>> b = open_backend("memory://")
>>> with b.transaction("s", writer="count:0") as tx:
...     tx.write(1, {'"k"': [1, 5]})
...     tx.commit(1, written=1, skipped=0)
>>> b.get("s", '"k"'), b.last_txid("s"), b.commits("s")
([1, 5], 1, [('count:0', 1, 1, 0)])
"""

from __future__ import annotations

import json
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from typing_extensions import override

from streams.exceptions import StateError

SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS squall_state (name TEXT NOT NULL, key TEXT NOT NULL, writer TEXT NOT NULL, txid INTEGER NOT NULL, "
    "value TEXT NOT NULL, PRIMARY KEY (name, key))",
    "CREATE INDEX IF NOT EXISTS squall_state_by_txid ON squall_state (name, writer, txid)",
    "CREATE TABLE IF NOT EXISTS squall_state_txid (name TEXT NOT NULL, writer TEXT NOT NULL, txid INTEGER NOT NULL, PRIMARY KEY (name, writer))",
    "CREATE TABLE IF NOT EXISTS squall_state_commits (seq INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, writer TEXT NOT NULL, "
    "txid INTEGER NOT NULL, written INTEGER NOT NULL, skipped INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS squall_kv (name TEXT NOT NULL, task INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (name, task, key))",
    "CREATE TABLE IF NOT EXISTS squall_kv_applied (name TEXT NOT NULL, task INTEGER NOT NULL, checkpoint INTEGER NOT NULL, source INTEGER NOT NULL, "
    "at REAL NOT NULL, max_offset INTEGER NOT NULL, ids BLOB NOT NULL, PRIMARY KEY (name, task, checkpoint, source))",
)

POSTGRES_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS squall_state (name TEXT NOT NULL, key TEXT NOT NULL, writer TEXT NOT NULL, txid BIGINT NOT NULL, "
    "value TEXT NOT NULL, PRIMARY KEY (name, key))",
    "CREATE INDEX IF NOT EXISTS squall_state_by_txid ON squall_state (name, writer, txid)",
    "CREATE TABLE IF NOT EXISTS squall_state_txid (name TEXT NOT NULL, writer TEXT NOT NULL, txid BIGINT NOT NULL, PRIMARY KEY (name, writer))",
    "CREATE TABLE IF NOT EXISTS squall_state_commits (seq BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, writer TEXT NOT NULL, "
    "txid BIGINT NOT NULL, written INTEGER NOT NULL, skipped INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS squall_kv (name TEXT NOT NULL, task INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (name, task, key))",
    "CREATE TABLE IF NOT EXISTS squall_kv_applied (name TEXT NOT NULL, task INTEGER NOT NULL, checkpoint BIGINT NOT NULL, source BIGINT NOT NULL, "
    "at DOUBLE PRECISION NOT NULL, max_offset BIGINT NOT NULL, ids BYTEA NOT NULL, PRIMARY KEY (name, task, checkpoint, source))",
)


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
        """The keys this writer last wrote in batch ``txid``."""

    @abstractmethod
    def committed(self, txid: int) -> bool:
        """Whether this writer's commit log holds batch ``txid``."""

    @abstractmethod
    def commit(self, txid: int, written: int, skipped: int) -> None:
        """Record ``txid`` as the writer's last committed batch and log the commit."""


class StateBackend(ABC):
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
    def kv_load(self, name: str, task: int) -> KvSnapshot:
        """A stateful task's last checkpoint: its ``key -> value`` (JSON texts), applied ids and checkpoint number."""

    @abstractmethod
    def kv_commit(self, name: str, task: int, commit: KvCommit) -> None:
        """Write one checkpoint of a stateful task in one database transaction (all of it or nothing)."""

    @abstractmethod
    def kv_items(self, name: str) -> Iterator[tuple[int, str, str]]:
        """``(task, key, value)`` of every task of state ``name`` (JSON texts)."""

    @abstractmethod
    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""


# -- SQLite ----------------------------------------------------------------------------------


class _SqliteTx(StateTx):
    def __init__(self, db: sqlite3.Connection, name: str, writer: str) -> None:
        self.db = db
        self.name = name
        self.writer = writer

    def read(self, keys: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            marks = ",".join("?" * len(part))
            for k, v in self.db.execute(f"SELECT key, value FROM squall_state WHERE name = ? AND key IN ({marks})", (self.name, *part)):
                out[k] = json.loads(v)
        return out

    def write(self, txid: int, rows: dict[str, Any]) -> None:
        self.db.executemany(
            "INSERT INTO squall_state (name, key, writer, txid, value) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(name, key) DO UPDATE SET writer = excluded.writer, txid = excluded.txid, value = excluded.value",
            [(self.name, k, self.writer, txid, json.dumps(v)) for k, v in rows.items()],
        )

    def delete(self, keys: list[str]) -> None:
        self.db.executemany("DELETE FROM squall_state WHERE name = ? AND key = ?", [(self.name, k) for k in keys])

    def last_txid(self) -> int | None:
        row = self.db.execute("SELECT txid FROM squall_state_txid WHERE name = ? AND writer = ?", (self.name, self.writer)).fetchone()
        return None if row is None else int(row[0])

    def keys_at(self, txid: int) -> list[str]:
        rows = self.db.execute("SELECT key FROM squall_state WHERE name = ? AND writer = ? AND txid = ?", (self.name, self.writer, txid))
        return [str(k) for (k,) in rows]

    def committed(self, txid: int) -> bool:
        row = self.db.execute("SELECT 1 FROM squall_state_commits WHERE name = ? AND writer = ? AND txid = ? LIMIT 1", (self.name, self.writer, txid))
        return row.fetchone() is not None

    def commit(self, txid: int, written: int, skipped: int) -> None:
        self.db.execute(
            "INSERT INTO squall_state_txid (name, writer, txid) VALUES (?, ?, ?) ON CONFLICT(name, writer) DO UPDATE SET txid = excluded.txid",
            (self.name, self.writer, txid),
        )
        self.db.execute(
            "INSERT INTO squall_state_commits (name, writer, txid, written, skipped) VALUES (?, ?, ?, ?, ?)", (self.name, self.writer, txid, written, skipped)
        )


class SqliteBackend(StateBackend):
    """State in one SQLite file (WAL mode; ``BEGIN IMMEDIATE`` per batch, so writers on several threads or processes of one machine take turns)."""

    def __init__(self, url: str, path: str) -> None:
        self.url = url
        self.path = path
        self._local = threading.local()
        self._shared: sqlite3.Connection | None = None
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"], state["path"])  # type: ignore[misc]

    def _db(self) -> sqlite3.Connection:
        if self.path == ":memory:":  # one connection, shared under a lock
            if self._shared is None:
                self._shared = self._connect()
            return self._shared
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
        return db

    def _connect(self) -> sqlite3.Connection:
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=self.path != ":memory:")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            for stmt in SQLITE_SCHEMA:
                db.execute(stmt)
            return db
        except (sqlite3.Error, OSError) as exc:
            raise StateError(f"[state] cannot open {self.url}: {exc}") from exc

    @override
    @contextmanager
    def transaction(self, name: str, writer: str = "") -> Iterator[StateTx]:
        with self._lock if self.path == ":memory:" else _nolock():
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                yield _SqliteTx(db, name, writer)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    @override
    def get(self, name: str, key: str) -> Any | None:
        row = self._db().execute("SELECT value FROM squall_state WHERE name = ? AND key = ?", (name, key)).fetchone()
        return None if row is None else json.loads(row[0])

    @override
    def items(self, name: str) -> Iterator[tuple[str, Any]]:
        for k, v in self._db().execute("SELECT key, value FROM squall_state WHERE name = ?", (name,)).fetchall():
            yield k, json.loads(v)

    @override
    def last_txid(self, name: str, writer: str | None = None) -> int | None:
        if writer is None:
            row = self._db().execute("SELECT MAX(txid) FROM squall_state_txid WHERE name = ?", (name,)).fetchone()
        else:
            row = self._db().execute("SELECT txid FROM squall_state_txid WHERE name = ? AND writer = ?", (name, writer)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    @override
    def commits(self, name: str) -> list[tuple[str, int, int, int]]:
        rows = self._db().execute("SELECT writer, txid, written, skipped FROM squall_state_commits WHERE name = ? ORDER BY seq", (name,)).fetchall()
        return [(str(wr), int(t), int(w), int(s)) for wr, t, w, s in rows]

    @override
    def kv_load(self, name: str, task: int) -> KvSnapshot:
        with self._lock if self.path == ":memory:" else _nolock():
            db = self._db()
            values = {str(k): str(v) for k, v in db.execute("SELECT key, value FROM squall_kv WHERE name = ? AND task = ?", (name, task))}
            rows = db.execute(
                "SELECT checkpoint, at, source, max_offset, ids FROM squall_kv_applied WHERE name = ? AND task = ? AND source <> -1 ORDER BY checkpoint",
                (name, task),
            ).fetchall()
            top = db.execute("SELECT MAX(checkpoint) FROM squall_kv_applied WHERE name = ? AND task = ? AND source = -1", (name, task)).fetchone()
        applied = [(int(c), float(a), int(s), int(m), bytes(b)) for c, a, s, m, b in rows]
        return KvSnapshot(values, applied, int(top[0]) if top and top[0] is not None else 0)

    @override
    def kv_commit(self, name: str, task: int, commit: KvCommit) -> None:
        with self._lock if self.path == ":memory:" else _nolock():
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "INSERT INTO squall_kv (name, task, key, value) VALUES (?, ?, ?, ?) ON CONFLICT(name, task, key) DO UPDATE SET value = excluded.value",
                    [(name, task, k, v) for k, v in commit.upserts.items()],
                )
                db.executemany("DELETE FROM squall_kv WHERE name = ? AND task = ? AND key = ?", [(name, task, k) for k in commit.deletes])
                rows = [(name, task, commit.checkpoint, s, commit.at, m, ids) for s, (m, ids) in commit.applied.items()]
                rows.append((name, task, commit.checkpoint, -1, commit.at, 0, b""))  # the checkpoint's own marker
                db.executemany(
                    "INSERT OR REPLACE INTO squall_kv_applied (name, task, checkpoint, source, at, max_offset, ids) VALUES (?, ?, ?, ?, ?, ?, ?)", rows
                )
                db.execute("DELETE FROM squall_kv_applied WHERE name = ? AND task = ? AND source = -1 AND checkpoint < ?", (name, task, commit.checkpoint))
                if commit.forget_upto:
                    db.execute(
                        "DELETE FROM squall_kv_applied WHERE name = ? AND task = ? AND source <> -1 AND checkpoint <= ?", (name, task, commit.forget_upto)
                    )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    @override
    def kv_items(self, name: str) -> Iterator[tuple[int, str, str]]:
        for t, k, v in self._db().execute("SELECT task, key, value FROM squall_kv WHERE name = ?", (name,)).fetchall():
            yield int(t), str(k), str(v)

    @override
    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


@contextmanager
def _nolock() -> Iterator[None]:
    yield


# -- PostgreSQL --------------------------------------------------------------------------------


class _PostgresTx(StateTx):
    def __init__(self, cur: Any, name: str, writer: str) -> None:
        self.cur = cur
        self.name = name
        self.writer = writer

    def read(self, keys: list[str]) -> dict[str, Any]:
        if not keys:
            return {}
        self.cur.execute("SELECT key, value FROM squall_state WHERE name = %s AND key = ANY(%s) FOR UPDATE", (self.name, keys))
        return {k: json.loads(v) for k, v in self.cur.fetchall()}

    def write(self, txid: int, rows: dict[str, Any]) -> None:
        if rows:
            self.cur.executemany(
                "INSERT INTO squall_state (name, key, writer, txid, value) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (name, key) DO UPDATE SET writer = EXCLUDED.writer, txid = EXCLUDED.txid, value = EXCLUDED.value",
                [(self.name, k, self.writer, txid, json.dumps(v)) for k, v in rows.items()],
            )

    def delete(self, keys: list[str]) -> None:
        if keys:
            self.cur.execute("DELETE FROM squall_state WHERE name = %s AND key = ANY(%s)", (self.name, keys))

    def last_txid(self) -> int | None:
        self.cur.execute("SELECT txid FROM squall_state_txid WHERE name = %s AND writer = %s", (self.name, self.writer))
        row = self.cur.fetchone()
        return None if row is None else int(row[0])

    def keys_at(self, txid: int) -> list[str]:
        self.cur.execute("SELECT key FROM squall_state WHERE name = %s AND writer = %s AND txid = %s FOR UPDATE", (self.name, self.writer, txid))
        return [str(k) for (k,) in self.cur.fetchall()]

    def committed(self, txid: int) -> bool:
        self.cur.execute("SELECT 1 FROM squall_state_commits WHERE name = %s AND writer = %s AND txid = %s LIMIT 1", (self.name, self.writer, txid))
        return self.cur.fetchone() is not None

    def commit(self, txid: int, written: int, skipped: int) -> None:
        self.cur.execute(
            "INSERT INTO squall_state_txid (name, writer, txid) VALUES (%s, %s, %s) ON CONFLICT (name, writer) DO UPDATE SET txid = EXCLUDED.txid",
            (self.name, self.writer, txid),
        )
        self.cur.execute(
            "INSERT INTO squall_state_commits (name, writer, txid, written, skipped) VALUES (%s, %s, %s, %s, %s)",
            (self.name, self.writer, txid, written, skipped),
        )


class PostgresBackend(StateBackend):
    """State in PostgreSQL (psycopg 3).

    Rows a batch reads are locked ``FOR UPDATE`` until it commits, so committer tasks on
    several machines never lose an update.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self._local = threading.local()

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"])  # type: ignore[misc]

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            try:
                import psycopg
            except ImportError as exc:
                raise StateError(f"[state] {self.url} needs psycopg: pip install 'squall[postgres]'") from exc
            try:
                conn = psycopg.connect(self.url, autocommit=True)
                with conn.transaction(), conn.cursor() as cur:
                    cur.execute("SELECT pg_advisory_xact_lock(7310)")  # one schema creator at a time
                    for stmt in POSTGRES_SCHEMA:
                        cur.execute(stmt)
            except psycopg.Error as exc:
                raise StateError(f"[state] cannot open {_redact(self.url)}: {exc}") from exc
            self._local.conn = conn
        return conn

    @override
    @contextmanager
    def transaction(self, name: str, writer: str = "") -> Iterator[StateTx]:
        conn = self._conn()
        with conn.transaction(), conn.cursor() as cur:
            yield _PostgresTx(cur, name, writer)

    def _rows(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        with self._conn().cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    @override
    def get(self, name: str, key: str) -> Any | None:
        rows = self._rows("SELECT value FROM squall_state WHERE name = %s AND key = %s", (name, key))
        return json.loads(rows[0][0]) if rows else None

    @override
    def items(self, name: str) -> Iterator[tuple[str, Any]]:
        for k, v in self._rows("SELECT key, value FROM squall_state WHERE name = %s", (name,)):
            yield k, json.loads(v)

    @override
    def last_txid(self, name: str, writer: str | None = None) -> int | None:
        if writer is None:
            rows = self._rows("SELECT MAX(txid) FROM squall_state_txid WHERE name = %s", (name,))
        else:
            rows = self._rows("SELECT txid FROM squall_state_txid WHERE name = %s AND writer = %s", (name, writer))
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    @override
    def commits(self, name: str) -> list[tuple[str, int, int, int]]:
        rows = self._rows("SELECT writer, txid, written, skipped FROM squall_state_commits WHERE name = %s ORDER BY seq", (name,))
        return [(str(wr), int(t), int(w), int(s)) for wr, t, w, s in rows]

    @override
    def kv_load(self, name: str, task: int) -> KvSnapshot:
        values = {str(k): str(v) for k, v in self._rows("SELECT key, value FROM squall_kv WHERE name = %s AND task = %s", (name, task))}
        rows = self._rows(
            "SELECT checkpoint, at, source, max_offset, ids FROM squall_kv_applied WHERE name = %s AND task = %s AND source <> -1 ORDER BY checkpoint",
            (name, task),
        )
        top = self._rows("SELECT MAX(checkpoint) FROM squall_kv_applied WHERE name = %s AND task = %s AND source = -1", (name, task))
        applied = [(int(c), float(a), int(s), int(m), bytes(b)) for c, a, s, m, b in rows]
        return KvSnapshot(values, applied, int(top[0][0]) if top and top[0][0] is not None else 0)

    @override
    def kv_commit(self, name: str, task: int, commit: KvCommit) -> None:
        conn = self._conn()
        with conn.transaction(), conn.cursor() as cur:
            if commit.upserts:
                cur.executemany(
                    "INSERT INTO squall_kv (name, task, key, value) VALUES (%s, %s, %s, %s) ON CONFLICT (name, task, key) DO UPDATE SET value = EXCLUDED.value",
                    [(name, task, k, v) for k, v in commit.upserts.items()],
                )
            if commit.deletes:
                cur.execute("DELETE FROM squall_kv WHERE name = %s AND task = %s AND key = ANY(%s)", (name, task, commit.deletes))
            rows = [(name, task, commit.checkpoint, s, commit.at, m, ids) for s, (m, ids) in commit.applied.items()]
            rows.append((name, task, commit.checkpoint, -1, commit.at, 0, b""))
            cur.executemany(
                "INSERT INTO squall_kv_applied (name, task, checkpoint, source, at, max_offset, ids) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (name, task, checkpoint, source) DO UPDATE SET at = EXCLUDED.at, max_offset = EXCLUDED.max_offset, ids = EXCLUDED.ids",
                rows,
            )
            cur.execute("DELETE FROM squall_kv_applied WHERE name = %s AND task = %s AND source = -1 AND checkpoint < %s", (name, task, commit.checkpoint))
            if commit.forget_upto:
                cur.execute(
                    "DELETE FROM squall_kv_applied WHERE name = %s AND task = %s AND source <> -1 AND checkpoint <= %s", (name, task, commit.forget_upto)
                )

    @override
    def kv_items(self, name: str) -> Iterator[tuple[int, str, str]]:
        for t, k, v in self._rows("SELECT task, key, value FROM squall_kv WHERE name = %s", (name,)):
            yield int(t), str(k), str(v)

    @override
    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


def _redact(url: str) -> str:
    """The URL without its password (for error messages)."""
    head, sep, tail = url.partition("@")
    if not sep or "//" not in head:
        return url
    scheme, _, cred = head.partition("//")
    return f"{scheme}//{cred.split(':', 1)[0]}@{tail}"


def open_backend(url: str) -> StateBackend:
    """The backend named by ``url`` (see the module docstring).

    Raises StateError for an unknown scheme.
    """
    if url == "memory://":
        return SqliteBackend(url, ":memory:")
    if url.startswith("sqlite://"):
        return SqliteBackend(url, url[len("sqlite://") :])
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresBackend(url)
    raise StateError(f"[state] unknown state store {url!r}: use sqlite:///path.db, postgresql://... or memory://")
