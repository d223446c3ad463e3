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

from collections.abc import Callable, Mapping

from streams.exceptions import StateError
from streams.state.backend import KvStore, StateBackend
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


class OpenedStores:
    """The state stores an executor opened, one per URL and shared by its tasks: :class:`streams.model.io.StateStores` on SQLite, PostgreSQL and Kafka.

    ``backend(url)`` opens Trident state (:func:`open_backend`) on first use; ``kv_store(url)``
    gives stateful bolts' checkpoints, in the same backend, or for ``kafka://`` in the
    compacted changelog ``open_changelog()`` opens (:mod:`streams.kafka.changelog_store`;
    None: not available, e.g. outside a Kafka executor).

    Args:
      open_changelog: opens the ``kafka://`` checkpoint store on the executor's Kafka.
      backends: stores already open, by URL (a test's).

    >>> stores = OpenedStores()
    >>> stores.backend("memory://", "count") is stores.kv_store("memory://", "count")
    True
    >>> stores.kv_store("kafka://", "count")
    Traceback (most recent call last):
    ...
    streams.exceptions.StateError: [count] kafka:// state needs a Kafka executor (not available here)
    >>> stores.close()
    """

    def __init__(self, open_changelog: Callable[[], KvStore] | None = None, backends: Mapping[str, StateBackend] | None = None) -> None:
        self.open_changelog = open_changelog
        self.backends: dict[str, StateBackend] = dict(backends or {})
        """Trident state backends by URL."""
        self.kv: dict[str, KvStore] = {}
        """Checkpoint stores by URL (a backend, or the changelog for ``kafka://``)."""

    def backend(self, url: str, component: str) -> StateBackend:
        """The backend at ``url``, opened on first use. Raises StateError naming ``component`` (a bad URL, an unreachable store)."""
        backend = self.backends.get(url)
        if backend is None:
            try:
                backend = self.backends[url] = open_backend(url)
            except StateError as exc:
                raise StateError(f"[{component}] {str(exc).removeprefix('[state] ')}") from None
        return backend

    def kv_store(self, url: str, component: str) -> KvStore:
        """The checkpoint store at ``url``. Raises StateError naming ``component``."""
        store = self.kv.get(url)
        if store is None:
            if url.startswith("kafka://"):
                if self.open_changelog is None:
                    raise StateError(f"[{component}] kafka:// state needs a Kafka executor (not available here)")
                store = self.open_changelog()
            else:
                store = self.backend(url, component)
            self.kv[url] = store
        return store

    def close(self) -> None:
        """Close every store opened here (a changelog store flushes its producers)."""
        for store in {id(s): s for s in [*self.backends.values(), *self.kv.values()]}.values():
            store.close()
        self.backends.clear()
        self.kv.clear()
