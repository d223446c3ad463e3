"""A stateful bolt task's state (Storm's ``KeyValueState``) and the tuple ids it applied, checkpointed together.

Exactly-once state updates with at-least-once delivery (docs/design.md, "Stateful bolts";
MillWheel's deduplication by record id): every tuple of a stateful topology carries an id that
is the same on every replay, ``(source, offset, path)``: the source partition's key
(:func:`streams.wire.ids.source_key`), the source record's offset, and a hash of the emits that
led to it. A task applies a tuple only if its id is not in :class:`AppliedIds`, and writes the
state's changes and the ids applied since the last checkpoint in one database transaction
(:class:`Checkpointer`). After a crash both come back as of that checkpoint: a replay of what
the checkpoint holds is skipped, the rest is applied again.

Pure but for :class:`Checkpointer`, which writes through a
:class:`~streams.state.backend.StateBackend` (SQLite or PostgreSQL).

>>> state = KeyValueState()
>>> state["the"] = state.get("the", 0) + 1
>>> state.put("a", 2); _ = state.delete("a")
>>> dict(state.items()), state.changes()
({'the': 1}, ({'"the"': '1'}, ['"a"']))
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from typing import Any

from streams.state.backend import KvCommit, StateBackend

_MISSING = object()
_PAIR = struct.Struct("<qI")
"""One packed applied id within a source: offset (int64), path (uint32)."""


class KeyValueState:
    """``key -> value`` of one stateful bolt task (Storm's ``KeyValueState``), held in memory.

    Keys and values must be JSON-serialisable (a key is stored as canonical JSON; a list key
    comes back as a tuple). Changes since the last checkpoint are tracked for
    :meth:`changes`. Not thread-safe (the executor's thread only).
    """

    def __init__(self, values: dict[Any, Any] | None = None) -> None:
        self._values: dict[Any, Any] = dict(values or {})
        self._dirty: set[Any] = set()
        self._deleted: set[Any] = set()

    def get(self, key: Any, default: Any = None) -> Any:
        """The value of ``key``, else ``default``."""
        return self._values.get(key, default)

    def put(self, key: Any, value: Any) -> None:
        """Set ``key`` to ``value`` (Storm's ``put``)."""
        self._values[key] = value
        self._dirty.add(key)
        self._deleted.discard(key)

    def delete(self, key: Any) -> Any:
        """Remove ``key``; returns its value (None if absent)."""
        value = self._values.pop(key, None)
        self._dirty.discard(key)
        self._deleted.add(key)
        return value

    def __getitem__(self, key: Any) -> Any:
        value = self._values.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def __delitem__(self, key: Any) -> None:
        self.delete(key)

    def __contains__(self, key: Any) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Every ``(key, value)``."""
        return iter(list(self._values.items()))

    def changes(self) -> tuple[dict[str, str], list[str]]:
        """``(upserts, deletes)`` since the last :meth:`clear_changes`, as JSON texts."""
        upserts = {_key(k): json.dumps(self._values[k], separators=(",", ":")) for k in self._dirty}
        return upserts, [_key(k) for k in self._deleted]

    def clear_changes(self) -> None:
        """The changes are durable (a checkpoint committed them)."""
        self._dirty.clear()
        self._deleted.clear()

    def replace(self, other: KeyValueState) -> None:
        """Become ``other`` (a rollback to a checkpoint), keeping this object: the bolt holds it."""
        self._values = dict(other._values)
        self._dirty.clear()
        self._deleted.clear()

    @staticmethod
    def loaded(values: dict[str, str]) -> KeyValueState:
        """A state from stored ``key -> value`` JSON texts (a checkpoint)."""
        return KeyValueState({_unkey(k): json.loads(v) for k, v in values.items()})


def _key(key: Any) -> str:
    return json.dumps(key, separators=(",", ":"), sort_keys=True)


def _unkey(raw: str) -> Any:
    key = json.loads(raw)
    return tuple(key) if isinstance(key, list) else key


TupleId = tuple[int, int, int]
"""``(source, offset, path)``: a tuple's identity across replays (see the module docstring)."""


class AppliedIds:
    """The ids of the tuples a task applied, until their source records can never be replayed.

    ``add`` returns False for an id already applied (a replay: skip it). Ids applied since the
    last checkpoint are kept apart (:meth:`pending_rows`), so a checkpoint writes only those.
    """

    def __init__(self) -> None:
        self._ids: set[int] = set()
        self._new: dict[int, list[tuple[int, int]]] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, tid: TupleId) -> bool:
        return _pack(tid) in self._ids

    def add(self, tid: TupleId) -> bool:
        """Record ``tid`` as applied; False if it already was."""
        key = _pack(tid)
        if key in self._ids:
            return False
        self._ids.add(key)
        self._new.setdefault(tid[0], []).append((tid[1], tid[2]))
        return True

    def pending_rows(self) -> dict[int, tuple[int, bytes]]:
        """``source -> (max offset, packed ids)`` applied since the last :meth:`clear_pending`."""
        return {s: (max(o for o, _ in pairs), b"".join(_PAIR.pack(o, p) for o, p in pairs)) for s, pairs in self._new.items()}

    def clear_pending(self) -> None:
        """The pending ids are durable."""
        self._new = {}

    def forget_pending(self) -> None:
        """Drop the ids applied since the last checkpoint (a rollback: their tuples will be applied again)."""
        for s, pairs in self._new.items():
            for o, p in pairs:
                self._ids.discard(_pack((s, o, p)))
        self._new = {}

    def load(self, rows: list[tuple[int, bytes]]) -> None:
        """Add the ids of checkpointed rows (``(source, packed ids)``)."""
        for source, blob in rows:
            for off, path in _PAIR.iter_unpack(blob):
                self._ids.add(_pack((source, off, path)))

    def prune(self, committed: dict[int, int]) -> int:
        """Forget ids whose source offset is below ``committed[source]`` (the spout will never replay them); returns how many went."""
        if not committed:
            return 0
        gone = [k for k in self._ids if (k >> 96) in committed and ((k >> 32) & _OFF_MASK) < committed[k >> 96]]
        self._ids.difference_update(gone)
        return len(gone)


_OFF_MASK = (1 << 64) - 1


def _pack(tid: TupleId) -> int:
    source, offset, path = tid
    return (source << 96) | ((offset & _OFF_MASK) << 32) | (path & 0xFFFFFFFF)


class Checkpointer:
    """Writes and reads a stateful task's checkpoints in a backend (state ``name``, task index ``task``).

    Raises StateError (the store) from its methods.
    """

    def __init__(self, backend: StateBackend, name: str, task: int) -> None:
        self.backend = backend
        self.name = name
        self.task = task
        self.checkpoint = 0
        """The last checkpoint committed (0: none yet)."""

    def restore(self, applied: AppliedIds) -> KeyValueState:
        """The state as of the last checkpoint; its applied ids go into ``applied``."""
        snap = self.backend.kv_load(self.name, self.task)
        self.checkpoint = snap.checkpoint
        applied.load(snap.applied)
        return KeyValueState.loaded(snap.values)

    def commit(self, state: KeyValueState, applied: AppliedIds, prune: dict[int, int] | None = None) -> int:
        """Write the state's changes and the ids applied since the last checkpoint, in one transaction; returns the checkpoint number.

        Steps:

        1. collect the changed keys and the new ids;
        2. write them, the checkpoint's marker and the pruning, in one database transaction;
        3. only then mark them durable in memory (a failure in 2 leaves them pending).
        """
        # 1. What changed since the last checkpoint.
        upserts, deletes = state.changes()
        rows = applied.pending_rows()
        number = self.checkpoint + 1
        # 2. One transaction: all of it or nothing.
        self.backend.kv_commit(self.name, self.task, KvCommit(number, upserts, deletes, rows, dict(prune or {})))
        # 3. Durable.
        state.clear_changes()
        applied.clear_pending()
        self.checkpoint = number
        return number
