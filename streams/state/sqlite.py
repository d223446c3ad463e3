"""State in one SQLite file (the embedded default) or in memory: :class:`SqliteBackend`, the tables of :mod:`streams.state.backend`."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from typing_extensions import override

from streams.exceptions import StateError
from streams.state.backend import KvCommit, KvSnapshot, StateBackend, StateTx
from streams.wire.codec import decode_json, encode_state

SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS squall_state (name TEXT NOT NULL, key TEXT NOT NULL, writer TEXT NOT NULL, txid INTEGER NOT NULL, "
    "value TEXT NOT NULL, PRIMARY KEY (name, key))",
    # No index on (name, writer, txid): keeping it cost every key written 22% (python -m bench
    # state); only an opaque replay of a writer's last batch asks which keys it wrote (keys_at).
    "DROP INDEX IF EXISTS squall_state_by_txid",
    "CREATE TABLE IF NOT EXISTS squall_state_txid (name TEXT NOT NULL, writer TEXT NOT NULL, txid INTEGER NOT NULL, PRIMARY KEY (name, writer))",
    "CREATE TABLE IF NOT EXISTS squall_state_commits (seq INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, writer TEXT NOT NULL, "
    "txid INTEGER NOT NULL, written INTEGER NOT NULL, skipped INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS squall_state_owner (name TEXT NOT NULL, writer TEXT NOT NULL, epoch INTEGER NOT NULL, PRIMARY KEY (name, writer))",
    "CREATE TABLE IF NOT EXISTS squall_kv (name TEXT NOT NULL, task INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (name, task, key))",
    "CREATE TABLE IF NOT EXISTS squall_kv_applied (name TEXT NOT NULL, task INTEGER NOT NULL, checkpoint INTEGER NOT NULL, source INTEGER NOT NULL, "
    "at REAL NOT NULL, max_offset INTEGER NOT NULL, ids BLOB NOT NULL, PRIMARY KEY (name, task, checkpoint, source))",
)


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
                out[k] = decode_json(v)
        return out

    def write(self, txid: int, rows: dict[str, Any]) -> None:
        self.db.executemany(
            "INSERT INTO squall_state (name, key, writer, txid, value) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(name, key) DO UPDATE SET writer = excluded.writer, txid = excluded.txid, value = excluded.value",
            [(self.name, k, self.writer, txid, encode_state(v)) for k, v in rows.items()],
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

    def claim(self, epoch: int) -> int:
        row = self.db.execute(
            "INSERT INTO squall_state_owner (name, writer, epoch) VALUES (?, ?, ?) "
            "ON CONFLICT(name, writer) DO UPDATE SET epoch = MAX(epoch, excluded.epoch) RETURNING epoch",
            (self.name, self.writer, epoch),
        ).fetchone()
        return int(row[0])


BUSY_TIMEOUT_S = 60.0
"""How long a connection waits for another's write lock (seconds)."""


def _when_unlocked(run: Callable[[], object], timeout_s: float = BUSY_TIMEOUT_S) -> None:
    """``run()``, again every 50 ms while SQLite says the database is locked, for up to ``timeout_s`` seconds.

    For ``PRAGMA journal_mode=WAL``: a new file's first switch to WAL needs every other
    connection out of the way, and SQLite answers "database is locked" at once instead of
    waiting out the busy timeout.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            run()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


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
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=self.path != ":memory:")
            _when_unlocked(lambda: db.execute("PRAGMA journal_mode=WAL"))
            db.execute("PRAGMA synchronous=FULL")
            # One write transaction, its lock taken first (the busy timeout applies): in
            # autocommit, each CREATE read the schema and then upgraded to a write, and an
            # upgrade that meets another process's commit fails at once with "database is
            # locked" (seen when the four committers of a new file connected together).
            db.execute("BEGIN IMMEDIATE")
            try:
                for stmt in SQLITE_SCHEMA:
                    db.execute(stmt)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
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
        return None if row is None else decode_json(row[0])

    @override
    def items(self, name: str) -> Iterator[tuple[str, Any]]:
        for k, v in self._db().execute("SELECT key, value FROM squall_state WHERE name = ?", (name,)).fetchall():
            yield k, decode_json(v)

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
