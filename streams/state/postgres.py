"""State in PostgreSQL (psycopg 3, the ``postgres`` extra): :class:`PostgresBackend`, the tables of :mod:`streams.state.backend`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from typing_extensions import override

from streams.exceptions import StateError
from streams.state.backend import KvCommit, KvSnapshot, StateBackend, StateTx
from streams.wire.codec import decode_json, encode_state

POSTGRES_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS squall_state (name TEXT NOT NULL, key TEXT NOT NULL, writer TEXT NOT NULL, txid BIGINT NOT NULL, "
    "value TEXT NOT NULL, PRIMARY KEY (name, key))",
    # No index on (name, writer, txid): keeping it cost every key written 22% (python -m bench
    # state); only an opaque replay of a writer's last batch asks which keys it wrote (keys_at).
    "DROP INDEX IF EXISTS squall_state_by_txid",
    "CREATE TABLE IF NOT EXISTS squall_state_txid (name TEXT NOT NULL, writer TEXT NOT NULL, txid BIGINT NOT NULL, PRIMARY KEY (name, writer))",
    "CREATE TABLE IF NOT EXISTS squall_state_commits (seq BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, writer TEXT NOT NULL, "
    "txid BIGINT NOT NULL, written INTEGER NOT NULL, skipped INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS squall_state_owner (name TEXT NOT NULL, writer TEXT NOT NULL, epoch BIGINT NOT NULL, PRIMARY KEY (name, writer))",
    "CREATE TABLE IF NOT EXISTS squall_kv (name TEXT NOT NULL, task INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (name, task, key))",
    "CREATE TABLE IF NOT EXISTS squall_kv_applied (name TEXT NOT NULL, task INTEGER NOT NULL, checkpoint BIGINT NOT NULL, source BIGINT NOT NULL, "
    "at DOUBLE PRECISION NOT NULL, max_offset BIGINT NOT NULL, ids BYTEA NOT NULL, PRIMARY KEY (name, task, checkpoint, source))",
)


READ_KEYS = "SELECT s.key, s.value FROM unnest(%s::text[]) AS u(k), LATERAL (SELECT key, value FROM squall_state WHERE name = %s AND key = u.k FOR UPDATE) AS s"
"""A batch's read of its keys' rows, locked until its transaction ends (keys, state name)."""


class _PostgresTx(StateTx):
    def __init__(self, cur: Any, name: str, writer: str) -> None:
        self.cur = cur
        self.name = name
        self.writer = writer

    def read(self, keys: list[str]) -> dict[str, Any]:
        if not keys:
            return {}
        # One primary-key probe per key (a LATERAL subquery that locks is never planned as a
        # join), not ``key = ANY(%s)`` or a join: on a young table's statistics the planner
        # answered those with a scan of every row of the state and its dead versions, so a
        # commit slowed as the state grew (107 -> 283 ms a batch over 30 word count batches;
        # this stays near 35 ms: ``python -m bench state``).
        self.cur.execute(READ_KEYS, (keys, self.name))
        return {k: decode_json(v) for k, v in self.cur.fetchall()}

    def write(self, txid: int, rows: dict[str, Any]) -> None:
        if rows:
            # One statement and one round trip for the whole batch (arrays unnested server-side),
            # not one INSERT per key.
            self.cur.execute(
                "INSERT INTO squall_state (name, key, writer, txid, value) SELECT %s, k, %s, %s, v FROM unnest(%s::text[], %s::text[]) AS u(k, v) "
                "ON CONFLICT (name, key) DO UPDATE SET writer = EXCLUDED.writer, txid = EXCLUDED.txid, value = EXCLUDED.value",
                (self.name, self.writer, txid, list(rows), [encode_state(v) for v in rows.values()]),
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

    def claim(self, epoch: int) -> int:
        self.cur.execute(
            "INSERT INTO squall_state_owner (name, writer, epoch) VALUES (%s, %s, %s) "
            "ON CONFLICT (name, writer) DO UPDATE SET epoch = GREATEST(squall_state_owner.epoch, EXCLUDED.epoch) RETURNING epoch",
            (self.name, self.writer, epoch),
        )
        row = self.cur.fetchone()
        return int(row[0])


IDLE_IN_TRANSACTION_S = 10
"""PostgreSQL ends a session that sits this long inside a transaction (seconds): a batch's
transaction runs its statements back to back, so only a client that is gone waits that long."""

KEEPALIVES: dict[str, Any] = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 3, "keepalives_count": 3}
"""TCP keepalives on the client's connection (libpq settings; they win over the URL's): a server that went away is noticed within about 20 s."""


class PostgresBackend(StateBackend):
    """State in PostgreSQL (psycopg 3).

    Rows a batch reads are locked ``FOR UPDATE`` until it commits, so committer tasks on
    several machines never lose an update. A committer cut off from the database mid-batch
    would hold those locks until TCP noticed (hours), and its replacement would wait on them
    (seen with a host cut off for good: the exactly-once word count stalled). So each session
    sets ``idle_in_transaction_session_timeout`` (:data:`IDLE_IN_TRANSACTION_S`): the server
    ends the lost session and frees its rows, and the replacement's batch goes on.
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
                conn = psycopg.connect(self.url, autocommit=True, **KEEPALIVES)
                conn.execute(f"SET idle_in_transaction_session_timeout = '{IDLE_IN_TRANSACTION_S}s'")
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
        return decode_json(rows[0][0]) if rows else None

    @override
    def items(self, name: str) -> Iterator[tuple[str, Any]]:
        for k, v in self._rows("SELECT key, value FROM squall_state WHERE name = %s", (name,)):
            yield k, decode_json(v)

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
