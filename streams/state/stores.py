"""Opening a state store by URL (``squall.state.url``).

``sqlite:///absolute/path.db``, ``sqlite://relative.db``, ``postgresql://user@host:5432/db``
(psycopg 3: the ``postgres`` extra), ``memory://`` (SQLite in memory, one per backend object:
tests and examples).

>>> b = open_backend("memory://")
>>> with b.transaction("s", writer="count:0") as tx:
...     tx.write(1, {'"k"': [1, 5]})
...     tx.commit(1, written=1, skipped=0)
>>> b.get("s", '"k"'), b.last_txid("s"), b.commits("s")
([1, 5], 1, [('count:0', 1, 1, 0)])
"""

from __future__ import annotations

from streams.exceptions import StateError
from streams.state.backend import StateBackend
from streams.state.postgres import PostgresBackend
from streams.state.sqlite import SqliteBackend


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
