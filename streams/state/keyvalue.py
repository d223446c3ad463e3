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
:class:`~streams.state.backend.KvStore` (SQLite, PostgreSQL or a compacted changelog topic).

>>> state = KeyValueState()
>>> state["the"] = state.get("the", 0) + 1
>>> state.put("a", 2); _ = state.delete("a")
>>> dict(state.items()), state.changes()
({'the': 1}, ({'"the"': '1'}, ['"a"']))
"""

from __future__ import annotations

import json
import sys
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from streams.state.backend import KvCommit, KvStore

_MISSING = object()

INTERNAL = "\x00squall"
"""First item of the runtime's own keys (tuples): a stateful windowed bolt keeps its window there.
:meth:`KeyValueState.items` and ``len`` leave them out."""


def internal_key(*parts: Any) -> tuple[Any, ...]:
    """A key of the runtime's own (``(INTERNAL, *parts)``), hidden from the bolt's view of its state."""
    return (INTERNAL, *parts)


def is_internal(key: Any) -> bool:
    """Whether ``key`` (a key, or its stored JSON text) is one of the runtime's own."""
    if isinstance(key, str):
        return key.startswith('["\\u0000squall"')
    return isinstance(key, tuple) and bool(key) and key[0] == INTERNAL


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
        return sum(1 for k in self._values if not is_internal(k))

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Every ``(key, value)`` (not the runtime's own keys, :func:`internal_key`)."""
        return iter([(k, v) for k, v in self._values.items() if not is_internal(k)])

    def changes(self) -> tuple[dict[str, str], list[str]]:
        """``(upserts, deletes)`` since the last :meth:`clear_changes`, as JSON texts."""
        values = self._values
        upserts = {_key(k): _value(values[k]) for k in self._dirty}
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


_KEY_JSON = json.JSONEncoder(separators=(",", ":"), sort_keys=True).encode
_VALUE_JSON = json.JSONEncoder(separators=(",", ":")).encode
_STR_JSON: Callable[[str], str] = json.encoder.encode_basestring_ascii


def _key(key: Any) -> str:
    """Canonical JSON of a key (a str, the common case, without building an encoder)."""
    return _STR_JSON(key) if type(key) is str else _KEY_JSON(key)


def _value(value: Any) -> str:
    """JSON of a value (an int, the common case, as its digits)."""
    return str(value) if type(value) is int else _VALUE_JSON(value)


def _unkey(raw: str) -> Any:
    key = json.loads(raw)
    return tuple(key) if isinstance(key, list) else key


TupleId = tuple[int, int, int]
"""``(source, offset, path)``: a tuple's identity across replays (see the module docstring)."""


@dataclass
class Generation:
    """The ids one checkpoint made durable.

    Its number, when (seconds since the epoch), the highest source offset per source, and the
    ids (packed ints).
    """

    checkpoint: int
    at: float
    max_offset: dict[int, int] = field(default_factory=dict)
    keys: tuple[int, ...] = ()
    """A tuple of ints: the cyclic GC stops tracking it (a list would be walked at every full collection)."""


class AppliedIds:
    """The ids of the tuples a task applied, until no copy of those tuples can come back.

    ``add`` returns False for an id already applied (a replay: skip it). Ids applied since the
    last checkpoint are kept apart (:meth:`pending_rows`), so a checkpoint writes only those;
    checkpointed ids are kept per checkpoint (:class:`Generation`), oldest first, so that they
    can be forgotten in the order they came (:meth:`forget`).
    """

    def __init__(self) -> None:
        self._ids: dict[int, None] = {}
        """The applied ids (packed), as a dict's keys: a dict of ints is not tracked by the cyclic
        GC, a set is, and a set of a million ids cost every full collection ~30 ms."""
        self._new: list[int] = []
        """The packed ids applied since the last checkpoint (the source is ``key >> 96``)."""
        self.generations: deque[Generation] = deque()

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, tid: TupleId) -> bool:
        return _pack(tid) in self._ids

    def add(self, tid: TupleId) -> bool:
        """Record ``tid`` as applied; False if it already was."""
        source, offset, path = tid
        key = (source << 96) | ((offset & _OFF_MASK) << 32) | (path & 0xFFFFFFFF)
        ids = self._ids
        if key in ids:
            return False
        ids[key] = None
        self._new.append(key)
        return True

    def _pending_by_source(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for k in self._new:
            s = k >> 96
            keys = out.get(s)
            if keys is None:
                out[s] = [k]
            else:
                keys.append(k)
        return out

    def pending_rows(self) -> dict[int, tuple[int, bytes]]:
        """``source -> (max offset, packed ids)`` applied since the last :meth:`clear_pending`.

        Packed: the offsets as int64, then the paths as uint32, little-endian.
        """
        out: dict[int, tuple[int, bytes]] = {}
        for s, keys in self._pending_by_source().items():
            offsets = array("q", [(k >> 32) & _OFF_MASK for k in keys])
            paths = array("I", [k & 0xFFFFFFFF for k in keys])
            out[s] = (max(offsets), _le(offsets) + _le(paths))
        return out

    def clear_pending(self, checkpoint: int = 0, at: float = 0.0, rows: dict[int, tuple[int, bytes]] | None = None) -> None:
        """The pending ids are durable, in checkpoint ``checkpoint`` written at ``at`` (``rows``: their :meth:`pending_rows`, if at hand)."""
        if self._new:
            gen = Generation(checkpoint, at)
            if rows is not None:
                gen.max_offset = {s: m for s, (m, _) in rows.items()}
            else:
                for s, keys in self._pending_by_source().items():
                    gen.max_offset[s] = max((k >> 32) & _OFF_MASK for k in keys)
            gen.keys = tuple(self._new)
            self.generations.append(gen)
        self._new = []

    def forget_pending(self) -> None:
        """Drop the ids applied since the last checkpoint (a rollback: their tuples will be applied again)."""
        pop = self._ids.pop
        for k in self._new:
            pop(k, None)
        self._new = []

    def load(self, rows: list[tuple[int, float, int, int, bytes]]) -> None:
        """Add checkpointed rows, ``(checkpoint, at, source, max offset, packed ids)``, oldest checkpoint first."""
        for checkpoint, at, source, max_offset, blob in rows:
            if not self.generations or self.generations[-1].checkpoint != checkpoint:
                self.generations.append(Generation(checkpoint, at))
            gen = self.generations[-1]
            gen.max_offset[source] = max(max_offset, gen.max_offset.get(source, -1))
            n = len(blob) // 12
            offsets, paths = array("q"), array("I")
            offsets.frombytes(blob[: 8 * n])
            paths.frombytes(blob[8 * n :])
            if sys.byteorder == "big":
                offsets.byteswap()
                paths.byteswap()
            keys = [(source << 96) | (o << 32) | p for o, p in zip(offsets, paths, strict=True)]
            self._ids.update(dict.fromkeys(keys))
            gen.keys += tuple(keys)

    def forget(self, committed: dict[int, int], before: float) -> int:
        """Forget the oldest checkpoints' ids that no copy can reach any more; returns the last checkpoint forgotten (0: none).

        A checkpoint's ids go when it was written before ``before`` (seconds since the epoch:
        now minus ``squall.state.dedupe.retention.secs``, for copies a bolt re-reads after a
        restart) and every source's offset in it is below ``committed[source]`` (the spout's
        committed offset: the spout never replays below it). Oldest first; the first that
        cannot go stops it.
        """
        last = 0
        while self.generations:
            gen = self.generations[0]
            if gen.at >= before or any(off >= committed.get(s, -1) for s, off in gen.max_offset.items()):
                break
            pop = self._ids.pop
            for k in gen.keys:
                pop(k, None)
            last = gen.checkpoint
            self.generations.popleft()
        return last


_OFF_MASK = (1 << 64) - 1


def _le(a: array[int]) -> bytes:
    """An array's bytes, little-endian."""
    if sys.byteorder == "big":
        a = array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


def _pack(tid: TupleId) -> int:
    source, offset, path = tid
    return (source << 96) | ((offset & _OFF_MASK) << 32) | (path & 0xFFFFFFFF)


class Checkpointer:
    """Writes and reads a stateful task's checkpoints in a backend (state ``name``, task index ``task``; ``clock``: seconds since the epoch).

    Raises StateError (the store) from its methods.
    """

    def __init__(self, backend: KvStore, name: str, task: int, clock: Callable[[], float] = time.time) -> None:
        self.backend = backend
        self.name = name
        self.task = task
        self.clock = clock
        self.checkpoint = 0
        """The last checkpoint committed (0: none yet)."""

    def restore(self, applied: AppliedIds) -> KeyValueState:
        """The state as of the last checkpoint; its applied ids go into ``applied``."""
        snap = self.backend.kv_load(self.name, self.task)
        self.checkpoint = snap.checkpoint
        applied.load(snap.applied)
        return KeyValueState.loaded(snap.values)

    def commit(self, state: KeyValueState, applied: AppliedIds, forget_upto: int = 0) -> int:
        """Write the state's changes and the ids applied since the last checkpoint, in one transaction; returns the checkpoint number.

        ``forget_upto``: the applied ids of checkpoints up to this number go from the store too
        (:meth:`AppliedIds.forget` dropped them from memory).

        Steps:

        1. collect the changed keys and the new ids;
        2. write them, the checkpoint's marker and what is forgotten, in one database transaction;
        3. only then mark them durable in memory (a failure in 2 leaves them pending).
        """
        # 1. What changed since the last checkpoint.
        upserts, deletes = state.changes()
        rows = applied.pending_rows()
        number = self.checkpoint + 1
        at = self.clock()
        # 2. One transaction: all of it or nothing.
        self.backend.kv_commit(self.name, self.task, KvCommit(number, at, upserts, deletes, rows, forget_upto))
        # 3. Durable.
        state.clear_changes()
        applied.clear_pending(number, at, rows)
        self.checkpoint = number
        return number
