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
from bisect import bisect_left
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


SEAL_IDS = 200_000
"""Ids an :class:`AppliedIds` holds in its dict before it packs them into a :class:`Segment` (at ~90 B each: ~18 MB)."""
SEAL_S = 30.0
"""Seconds of checkpoints an :class:`AppliedIds` gathers in its dict at most before it packs them."""

_M64 = (1 << 64) - 1


@dataclass
class Segment:
    """Consecutive checkpoints' ids, packed: 8 bytes per id.

    ``first``..``last``: the checkpoint numbers it holds; ``at``: when the last was written
    (seconds since the epoch); ``max_offset``: the highest source offset per source; ``runs``:
    per *run key* ``source << 32 | offset >> 32``, the sorted uint64s
    ``(offset & 0xFFFFFFFF) << 32 | path`` (a packed id's low 64 bits; its high bits are the run key).
    """

    first: int
    last: int
    at: float
    max_offset: dict[int, int] = field(default_factory=dict)
    runs: dict[int, array[int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return sum(len(r) for r in self.runs.values())

    def __contains__(self, key: int) -> bool:
        """Whether the packed id ``key`` is in it (a binary search)."""
        run = self.runs.get(key >> 64)
        if run is None:
            return False
        low = key & _M64
        if low < run[0] or low > run[-1]:
            return False
        i = bisect_left(run, low)
        return run[i] == low

    def nbytes(self) -> int:
        """Bytes its runs hold (8 per id; the objects around them aside)."""
        return sum(r.itemsize * len(r) for r in self.runs.values())

    @staticmethod
    def packed(first: int, last: int, at: float, max_offset: dict[int, int], keys: list[int]) -> Segment:
        """A segment of the packed ids ``keys`` (any order, no duplicates)."""
        seg = Segment(first, last, at, dict(max_offset))
        keys.sort()
        i, n = 0, len(keys)
        while i < n:
            rk = keys[i] >> 64
            j = bisect_left(keys, (rk + 1) << 64, i)
            seg.runs[rk] = array("Q", [k & _M64 for k in keys[i:j]])
            i = j
        return seg


class AppliedIds:
    """The ids of the tuples a task applied, until no copy of those tuples can come back: 8 bytes per id.

    ``add`` returns False for an id already applied (a replay: skip it). Ids applied since the
    last checkpoint are kept apart (:meth:`pending_rows`), so a checkpoint writes only those.
    Recent ids sit in a dict (fast, ~90 B each); once it holds ``seal_ids`` ids or ``seal_s``
    seconds of checkpoints, a checkpoint packs them into a :class:`Segment` of sorted uint64s
    (8 B each, found by binary search; the idea of an LSM tree's memtable and sorted runs).
    Segments are forgotten whole, oldest first (:meth:`forget`): an id lives at most ``seal_s``
    longer than its own checkpoint would.

    Memory: ``8 * ids + ~90 * seal_ids`` bytes at most, whatever the rate (the dict's share is
    bounded; ``python -m bench state-memory`` measures it).
    """

    def __init__(self, seal_ids: int = SEAL_IDS, seal_s: float = SEAL_S) -> None:
        self.seal_ids = seal_ids
        self.seal_s = seal_s
        self._ids: dict[int, None] = {}
        """Ids not yet packed (packed ints), as a dict's keys: a dict of ints is not tracked by the
        cyclic GC, a set is, and a set of a million ids cost every full collection ~30 ms."""
        self._new: list[int] = []
        """The packed ids applied since the last checkpoint (the source is ``key >> 96``)."""
        self._open: Segment | None = None
        """The checkpoints whose ids are in ``_ids`` (``runs`` empty until :meth:`_seal` packs them)."""
        self._open_since = 0.0
        """When the open segment's first checkpoint was written (seconds since the epoch)."""
        self.segments: deque[Segment] = deque()
        """Packed checkpoints, oldest first."""
        self._cold: dict[int, tuple[int, int]] = {}
        """Per run key, the lowest and highest low-64 bits in any segment: most lookups stop here."""

    def __len__(self) -> int:
        return len(self._ids) + sum(len(s) for s in self.segments)

    def __contains__(self, tid: TupleId) -> bool:
        key = _pack(tid)
        return key in self._ids or self._in_segments(key)

    def _in_segments(self, key: int) -> bool:
        span = self._cold.get(key >> 64)
        if span is None or not span[0] <= key & _M64 <= span[1]:
            return False
        return any(key in seg for seg in reversed(self.segments))

    def add(self, tid: TupleId) -> bool:
        """Record ``tid`` as applied; False if it already was."""
        source, offset, path = tid
        key = (source << 96) | ((offset & _OFF_MASK) << 32) | (path & 0xFFFFFFFF)
        ids = self._ids
        if key in ids:
            return False
        if self._cold:  # a packed id? Most are above every segment's highest for their run: one lookup
            span = self._cold.get(key >> 64)
            if span is not None and span[0] <= (key & _M64) <= span[1] and self._in_segments(key):
                return False
        ids[key] = None
        self._new.append(key)
        return True

    def checkpoints(self) -> list[int]:
        """The checkpoints whose ids are held, oldest first (a segment's as its range)."""
        out = [c for seg in self.segments for c in range(seg.first, seg.last + 1)]
        if self._open is not None:
            out.extend(range(self._open.first, self._open.last + 1))
        return out

    def nbytes(self) -> int:
        """Bytes the ids take, about: 8 per packed id, ~90 per id in the dict."""
        return sum(s.nbytes() for s in self.segments) + 90 * len(self._ids)

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
        """The pending ids are durable, in checkpoint ``checkpoint`` written at ``at`` (``rows``: their :meth:`pending_rows`, if at hand).

        Steps:

        1. note the checkpoint's highest offset per source in the open segment;
        2. the pending ids are no longer pending (they stay in the dict);
        3. pack the dict into a segment once it holds ``seal_ids`` ids or ``seal_s`` seconds.
        """
        if self._new:
            # 1. The checkpoint joins the open segment.
            if rows is not None:
                highest = {s: m for s, (m, _) in rows.items()}
            else:
                highest = {s: max((k >> 32) & _OFF_MASK for k in keys) for s, keys in self._pending_by_source().items()}
            self._note(checkpoint, at, highest)
        # 2. Durable.
        self._new = []
        # 3. Packed when large or old enough.
        opened = self._open
        if opened is not None and (len(self._ids) >= self.seal_ids or at - self._open_since >= self.seal_s):
            self._seal()

    def _note(self, checkpoint: int, at: float, highest: dict[int, int]) -> None:
        """Checkpoint ``checkpoint``, written at ``at`` with these highest offsets per source, joins the open segment."""
        opened = self._open
        if opened is None:
            self._open = Segment(checkpoint, checkpoint, at, dict(highest))
            self._open_since = at
            return
        opened.last = checkpoint
        opened.at = max(opened.at, at)
        for s, m in highest.items():
            if m > opened.max_offset.get(s, -1):
                opened.max_offset[s] = m

    def _seal(self) -> None:
        """Pack the open segment's ids (every id in the dict: none is pending) into a :class:`Segment`."""
        opened = self._open
        assert opened is not None and not self._new
        seg = Segment.packed(opened.first, opened.last, opened.at, opened.max_offset, list(self._ids))
        self.segments.append(seg)
        for rk, run in seg.runs.items():
            span = self._cold.get(rk)
            self._cold[rk] = (run[0], run[-1]) if span is None else (min(span[0], run[0]), max(span[1], run[-1]))
        self._ids = {}
        self._open = None

    def forget_pending(self) -> None:
        """Drop the ids applied since the last checkpoint (a rollback: their tuples will be applied again)."""
        pop = self._ids.pop
        for k in self._new:
            pop(k, None)
        self._new = []

    def load(self, rows: list[tuple[int, float, int, int, bytes]]) -> None:
        """Add checkpointed rows, ``(checkpoint, at, source, max offset, packed ids)``, oldest checkpoint first.

        They are packed as they come (``seal_ids`` ids or ``seal_s`` seconds to a segment): a
        restore never holds more than ``seal_ids`` ids in the dict.
        """
        for checkpoint, at, source, max_offset, blob in rows:
            opened = self._open
            if opened is not None and checkpoint != opened.last and (len(self._ids) >= self.seal_ids or at - self._open_since >= self.seal_s):
                self._seal()
            n = len(blob) // 12
            offsets, paths = array("q"), array("I")
            offsets.frombytes(blob[: 8 * n])
            paths.frombytes(blob[8 * n :])
            if sys.byteorder == "big":
                offsets.byteswap()
                paths.byteswap()
            self._ids.update(dict.fromkeys((source << 96) | (o << 32) | p for o, p in zip(offsets, paths, strict=True)))
            self._note(checkpoint, at, {source: max_offset})
        if self._open is not None:
            self._seal()

    def forget(self, committed: dict[int, int], before: float) -> int:
        """Forget the oldest segments' ids that no copy can reach any more; returns the last checkpoint forgotten (0: none).

        A segment's ids go when its last checkpoint was written before ``before`` (seconds since
        the epoch: now minus ``squall.state.dedupe.retention.secs``, for copies a bolt re-reads
        after a restart) and every source's offset in it is below ``committed[source]`` (the
        spout's committed offset: the spout never replays below it). Oldest first; the first
        that cannot go stops it. The ids not yet packed are never forgotten.
        """
        last = 0
        while self.segments:
            seg = self.segments[0]
            if seg.at >= before or any(off >= committed.get(s, -1) for s, off in seg.max_offset.items()):
                break
            last = seg.last
            self.segments.popleft()
        if last:
            cold: dict[int, tuple[int, int]] = {}
            for seg in self.segments:
                for rk, run in seg.runs.items():
                    span = cold.get(rk)
                    cold[rk] = (run[0], run[-1]) if span is None else (min(span[0], run[0]), max(span[1], run[-1]))
            self._cold = cold
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
