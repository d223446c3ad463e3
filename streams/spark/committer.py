"""Transactional committer state for SparkBolts: the micro-batch id is the txid.

Storm's transactional topologies (and Trident's transactional state) store
``key -> (txid, value)``: applying batch ``txid`` to a key whose stored txid is already
``txid`` is skipped, because that batch's update is already in the value. Spark runs
micro-batches' tasks in parallel but commits them one at a time in batch-id order, so a
SparkBolt with a :class:`Committer` gets Storm's two phases for free: processing in
parallel, commits in strict txid order. After a crash Spark re-runs the last uncommitted
batch with the *same* id and the same offsets, so its state write is skipped.
"""

from __future__ import annotations

import json
import operator
import sqlite3
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class ApplyResult:
    """What one :meth:`TxidStore.apply` did: keys ``written`` and keys ``skipped``
    (already at this txid)."""

    txid: int
    written: int
    skipped: int


class TxidStore:
    """``key -> (txid, value)`` in SQLite (one file; safe across process restarts).

    Keys and values are JSON. ``apply`` is one SQLite transaction, so a crash leaves
    either all or none of a batch's keys at the new txid.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._local = threading.local()

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self._local = threading.local()

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, txid INTEGER NOT NULL, value TEXT NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS batches (txid INTEGER PRIMARY KEY, written INTEGER, skipped INTEGER)")
            self._local.db = db
        return db

    def apply(self, txid: int, updates: Iterable[tuple[Any, Any]], combine: Callable[[Any, Any], Any]) -> ApplyResult:
        """Fold ``updates`` (``(key, delta)``, keys unique) into the state at ``txid``.

        A key whose stored txid equals ``txid`` is skipped (the batch was applied before
        a crash); others become ``(txid, combine(old, delta))`` (``delta`` if new).
        """
        db = self._db()
        written = skipped = 0
        db.execute("BEGIN IMMEDIATE")
        try:
            for key, delta in updates:
                k = json.dumps(key, sort_keys=True)
                row = db.execute("SELECT txid, value FROM state WHERE key = ?", (k,)).fetchone()
                if row is not None and row[0] == txid:
                    skipped += 1
                    continue
                value = delta if row is None else combine(json.loads(row[1]), delta)
                db.execute("INSERT OR REPLACE INTO state (key, txid, value) VALUES (?, ?, ?)", (k, txid, json.dumps(value)))
                written += 1
            db.execute(
                "INSERT INTO batches (txid, written, skipped) VALUES (?, ?, ?) "
                "ON CONFLICT(txid) DO UPDATE SET skipped = batches.skipped + excluded.skipped, written = batches.written + excluded.written",
                (txid, written, skipped),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return ApplyResult(txid, written, skipped)

    def get(self, key: Any) -> tuple[int, Any] | None:
        """``(txid, value)`` of ``key``, or None."""
        row = self._db().execute("SELECT txid, value FROM state WHERE key = ?", (json.dumps(key, sort_keys=True),)).fetchone()
        return None if row is None else (row[0], json.loads(row[1]))

    def items(self) -> dict[Any, Any]:
        """Every ``key -> value`` (keys decoded from JSON; lists become tuples)."""
        out = {}
        for k, v in self._db().execute("SELECT key, value FROM state"):
            key = json.loads(k)
            out[tuple(key) if isinstance(key, list) else key] = json.loads(v)
        return out

    def batches(self) -> dict[int, tuple[int, int]]:
        """``txid -> (keys written, keys skipped)``, summed over every apply of that txid."""
        return {t: (w, s) for t, w, s in self._db().execute("SELECT txid, written, skipped FROM batches")}


class Committer:
    """Makes a SparkBolt a committer bolt (Storm's ``ICommitter``).

    The bolt's function returns ``[key, delta]`` items instead of tuples to emit. Deltas
    are combined per key with ``combine`` (default ``+``) in the tasks, then once more on
    the driver, which applies them to ``store`` with txid = the micro-batch id *before*
    it acks the batch's tuples.
    """

    def __init__(self, store: TxidStore, combine: Callable[[Any, Any], Any] = operator.add) -> None:
        self.store = store
        self.combine = combine

    def fold(self, updates: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
        """Combine ``(key, delta)`` pairs per key (keys as canonical JSON)."""
        out: dict[str, Any] = {}
        combine = self.combine
        for key, delta in updates:
            k = json.dumps(key, sort_keys=True)
            out[k] = delta if k not in out else combine(out[k], delta)
        return out

    def commit(self, txid: int, folded: dict[str, Any]) -> ApplyResult:
        return self.store.apply(txid, ((json.loads(k), v) for k, v in folded.items()), self.combine)
