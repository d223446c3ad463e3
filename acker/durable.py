"""Crash-safe acker state for one acker task: the ledger plus its changelog discipline.

Pure logic shared by both runtimes (native and faust); they only move bytes.

Measured on the embedded broker: a naive XOR-then-delete changelog double-applies the
ops replayed after a ``kill -9`` (trees completed twice, acked then failed, or lost). So:

1. **Tags.** Op ``i`` of the record at input offset ``o`` has tag ``o << 20 | i``. Each
   changelog record carries the tag of the last op applied to that root; after a restore,
   a replayed op at or below it is skipped (:data:`acker.ledger.SKIP`).
2. **Done records.** A finished tree that had a live changelog record leaves a done
   record ``[tag]`` (not a tombstone), so replayed ops for it are skipped too. It is
   tombstoned by :meth:`DurableLedger.gc` once the input offset that finished it is
   committed. A tree that started and finished between two flushes never reached the
   changelog; all its ops are above the last commit, so a replay redoes it whole.
3. **Young trees stay out of the changelog.** A tree younger than ``persist_after_s``
   that never had a live record is not written; instead the input offsets are committed
   no further than the first op of any such tree (:meth:`commit_offset`), so a replay
   redoes it whole. Most trees finish within a second, so most trees cost the changelog
   nothing (before: a live record, a done record and a tombstone each, for every tree
   that lived across a flush). A tree that reaches the age is written at the next flush.
   After a crash, the ops of up to ``persist_after_s`` seconds are replayed: duplicate
   completions (ignored by the spout) and, for a tree cut by the replay's start, an
   entry without its init that expires as ``orphaned`` (nobody is told twice).
4. **Order per flush** (the runtime's job): send ack results and wait for the broker to
   confirm them -> write :meth:`changelog` records and wait -> commit input offsets up
   to :meth:`commit_offset` -> write :meth:`gc` tombstones. A crash anywhere replays ops
   whose effects are either skipped (tagged) or redone; the worst case is a *duplicate
   completion*, which the spout ignores and counts. Trees are never lost or failed by a
   crash.

Changelog value (``schemas/acker-changelog.schema.json``): live ``[val, task|null,
start_s, tag]`` (``[..., tag, true]`` when a fail arrived before the init), done
``[tag]``, tombstone ``null``. A live record written after a done record of the same
root (a late op re-created the entry) drops the done record, so no tombstone follows it. Key: the root, 8 bytes big-endian.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from acker.ledger import SKIP, Ledger, Outcome, PendingTree
from streams.exceptions import DecodeError
from streams.wire.acker import MAX_SPOUT_TASK, OP_ACK, OP_FAIL, OP_INIT, OP_RESET, U64, decode_list
from streams.wire.codec import encode_json, exact

TAG_BITS = 20
MAX_OPS_PER_RECORD = 1 << TAG_BITS

MAX_EARLY_WHYS = 10_000
"""Fails' reasons kept for trees whose init has not arrived (~100 bytes each at most ~300 characters: a few MB at worst)."""


MAX_START_S = 2**48 / 1000
"""A changelog record's start (seconds on the acker's clock) fits in 48 bits of milliseconds: up to the year 10889.

The table keeps it to the millisecond within 24.8 days of its bucket's epoch, and clamps it beyond
(:meth:`acker.table.CompactTable.pack_start`): only a tree pending that long reads a wrong start."""
MAX_TAG = 2**62 - 2
"""The largest changelog tag (:meth:`acker.table.CompactTable.pack_aux`)."""


def changelog_value(value: list[Any]) -> bytes:
    """A changelog value as compact JSON, in a buffer of its own size.

    orjson (3.13) returns its output in the 4 KiB buffer it wrote it to: measured with
    tracemalloc and in RSS, 4,098 bytes per retained record. A flush of 100,000 records held
    400 MB until it was sent, and faust's Table kept one per tree (4,243 B per tree). The copy
    costs about 0.1 us per record.
    """
    return exact(encode_json(value))


def _changelog_problem(value: list[Any]) -> str | None:
    def nat(x: Any) -> bool:
        return type(x) is int and x >= 0

    if len(value) == 1:
        return None if nat(value[0]) else "a done record is [tag]"
    if len(value) not in (4, 5):
        return "a live record is [val, task|null, start_s, tag(, failed)]"
    val, task, start, tag = value[:4]
    if not (type(val) is int and 0 <= val < U64) or not (task is None or nat(task)) or type(start) not in (int, float) or not nat(tag):
        return "a live record is [val (u64), task|null, start_s, tag]"
    if (task is not None and task > MAX_SPOUT_TASK) or not 0 <= start < MAX_START_S or tag > MAX_TAG:
        return f"a live record's spout task (0..{MAX_SPOUT_TASK}), start (0..{MAX_START_S:.0f} s) or tag (0..2**62-2) is out of range"
    if len(value) == 5 and type(value[4]) is not bool:
        return "failed must be true or false"
    return None


def decode_changelog(key: bytes | None, raw: bytes | None, *, component: str, topic: str, partition: int, offset: int) -> tuple[int, list[Any] | None]:
    r"""Decode a changelog record into ``(root, value)`` (``None``: a tombstone).

    Raises:
      DecodeError: naming the record, for a key that is not 8 bytes or a bad value.

    >>> decode_changelog(b"\x00" * 7 + b"\x05", b"[9, 1, 12.5, 40]", component="__acker", topic="c", partition=0, offset=7)
    (5, [9, 1, 12.5, 40])
    """
    if key is None or len(key) != 8:
        raise DecodeError("the key must be the root id, 8 bytes", component=component, topic=topic, partition=partition, offset=offset)
    root = int.from_bytes(key, "big")
    if raw is None:
        return root, None
    value = decode_list(raw, component=component, topic=topic, partition=partition, offset=offset)
    problem = _changelog_problem(value)
    if problem is not None:
        raise DecodeError(problem, component=component, topic=topic, partition=partition, offset=offset)
    return root, value


def tag_of(offset: int, index: int) -> int:
    """The changelog tag of op ``index`` of the record at ``offset`` (offset and index in one int)."""
    return (offset << TAG_BITS) | index


def offset_of(tag: int) -> int:
    """The input offset a changelog tag came from (see :func:`tag_of`)."""
    return tag >> TAG_BITS


@dataclass(slots=True)
class YoungTrees:
    """Trees first seen in one flush window and not yet in the changelog.

    ``seen_s``: the flush that found them (ledger clock, seconds); every one started at or
    before it. ``first_offset``: the first input offset applied in their window; each
    one's first op is at or above it. ``roots``: in the order found; ``checked``: how many
    leading roots are known to be finished or persisted.
    """

    seen_s: float
    first_offset: int
    roots: list[int] = field(default_factory=list)
    checked: int = 0


class DurableLedger:
    """One acker task's ledger with tags, done records and pending changelog writes.

    Args:
      ledger: the pure state machine (its clock is the changelog's clock).
      persist_after_s: a tree is written to the changelog once it is this old (seconds;
        0: every tree changed in a flush is written at that flush, for runtimes that do
        not commit their own offsets, e.g. faust's). See the module docstring, step 3.

    Example: a tree that finishes young never reaches the changelog, and the commit waits
    for it while it lives::

        >>> from acker.ledger import Ledger
        >>> now = [100.0]
        >>> dl = DurableLedger(Ledger(30, clock=lambda: now[0]), persist_after_s=1.0)
        >>> _ = dl.apply(0, [[0, 7, 3, 0]])      # init root 7 at input offset 0
        >>> dl.changelog(), dl.commit_offset(1)  # young: not written, commit held at 0
        ([], 0)
        >>> [o.acked for o in dl.apply(1, [[1, 7, 3]])]
        [True]
        >>> dl.changelog(), dl.commit_offset(2)
        ([], 2)
    """

    def __init__(self, ledger: Ledger, persist_after_s: float = 0.0) -> None:
        self.ledger = ledger
        self.persist_after_s = persist_after_s
        self.done: dict[int, int] = {}  # root -> tag of the op that finished it
        self._dirty: set[int] = set()
        self._done_unwritten: set[int] = set()
        self._young: deque[YoungTrees] = deque()
        self._young_roots: set[int] = set()
        self._window_first: int | None = None  # first input offset applied since the last flush
        self.whys: dict[int, str] = {}
        """Why trees failed before their init arrived (the fail op's words), until the init ends them.

        At most :data:`MAX_EARLY_WHYS`; not in the changelog."""
        self.max_tag = -1
        self.skipped = 0
        self.written = 0
        """Live records written to the changelog (a counter for the metrics)."""
        self.resets: list[tuple[int, int]] = []
        """``(root, spout task)`` of the trees whose timeout a bolt reset since :meth:`take_resets`: their spouts are told too."""

    def apply(self, offset: int, ops: list[list[Any]]) -> list[Outcome]:
        """Apply one input record's ops; returns the trees that finished.

        Raises ValueError if a record holds more than 2**20 ops.
        """
        if len(ops) >= MAX_OPS_PER_RECORD:
            raise ValueError(f"record at offset {offset} holds {len(ops)} ops (max {MAX_OPS_PER_RECORD - 1})")
        ledger = self.ledger
        done = self.done
        dirty = self._dirty
        young = self._young_roots
        outs: list[Outcome] = []
        if self._window_first is None:
            self._window_first = offset
        base = offset << TAG_BITS
        for i, op in enumerate(ops):
            tag = base | i
            code = op[0]
            root = op[1]
            if done:
                d = done.get(root)
                if d is not None and tag <= d:
                    self.skipped += 1
                    continue
            if code == OP_ACK:
                out = ledger.ack(root, op[2], tag)
            elif code == OP_INIT:
                out = ledger.init(root, op[2], op[3], tag)
            elif code == OP_FAIL:
                out = ledger.fail(root, tag)
                if len(op) == 3 and op[2]:  # it says why
                    if out is None:
                        self._early_why(root, op[2])
                    elif out is not SKIP:
                        out.why = op[2]
            elif code == OP_RESET:
                out = ledger.reset_timeout(root, tag)
                if out is None:
                    task = ledger.spout_task_of(root)
                    if task is not None:
                        self.resets.append((root, task))
            else:
                raise ValueError(f"unknown acker op {code!r} at offset {offset}")
            if out is None:
                # Live and changed: a changelog candidate at the next flush, unless it is a young
                # tree already in a window (that window writes it whole if it lives long enough).
                if root not in young:
                    dirty.add(root)
            elif out is SKIP:
                self.skipped += 1
            else:
                # Finished: only a tree the changelog holds needs a record (its done record);
                # one that never reached it needs nothing.
                if out.persisted:
                    self._finished(out, tag)
                    dirty.add(root)
                if self.whys and not out.acked:
                    out.why = self.whys.pop(root, "") or out.why
                outs.append(out)
        if ops:
            self.max_tag = max(self.max_tag, base | (len(ops) - 1))
        return outs

    def _early_why(self, root: int, why: str) -> None:
        whys = self.whys
        whys[root] = why
        if len(whys) > MAX_EARLY_WHYS:  # the oldest goes: its tree's dead letter will not say why
            del whys[next(iter(whys))]

    def take_resets(self) -> list[tuple[int, int]]:
        """The resets applied since the last call, ``(root, spout task)`` (Storm's acker forwards them to the spout)."""
        out, self.resets = self.resets, []
        return out

    def _finished(self, out: Outcome, tag: int) -> None:
        if out.persisted:
            self.done[out.root] = tag
            self._done_unwritten.add(out.root)

    def expire(self) -> list[Outcome]:
        """Timed-out trees (RotatingMap tick)."""
        outs = self.ledger.tick()
        whys = self.whys
        for out in outs:
            if whys:
                out.why = whys.pop(out.root, "")
            self._dirty.add(out.root)
            self._finished(out, self.max_tag)
        return outs

    def changelog(self, final: bool = False) -> list[tuple[int, bytes | None]]:
        """Records to write now: ``(root, value)``; marks the written entries persisted.

        Written: every changed tree that is persisted already or at least
        ``persist_after_s`` old, every young tree that reached that age since the last
        call, and done records. ``final``: write every live tree (a graceful stop, so the
        commit can reach the end of the input).
        """
        now = self.ledger.clock()
        young_before = now - self.persist_after_s
        recs: list[tuple[int, bytes | None]] = []
        found: list[int] = []
        keep_young = self.persist_after_s > 0 and not final
        ledger = self.ledger
        young_roots = self._young_roots
        for root in self._dirty:
            seen = ledger.peek(root)
            if seen is not None:
                if keep_young and not seen[1] and seen[0] > young_before:
                    if root not in young_roots:
                        young_roots.add(root)
                        found.append(root)
                    continue
                entry = ledger.get(root)
                assert entry is not None
                self._write_live(root, entry, recs)
            elif root in self._done_unwritten:
                recs.append((root, changelog_value([self.done[root]])))
        self._dirty.clear()
        self._done_unwritten.clear()
        if found:
            first = self._window_first if self._window_first is not None else 0
            self._young.append(YoungTrees(now, first, found))
        self._window_first = None
        # Windows old enough: write their trees still live; then drop finished windows.
        young = self._young
        while young and (not keep_young or young[0].seen_s <= young_before):
            for root in young.popleft().roots:
                self._young_roots.discard(root)
                entry = self.ledger.get(root)
                if entry is not None and not entry.persisted:
                    self._write_live(root, entry, recs)
        while young and self._all_settled(young[0]):
            for root in young.popleft().roots:
                self._young_roots.discard(root)
        return recs

    def _write_live(self, root: int, entry: PendingTree, recs: list[tuple[int, bytes | None]]) -> None:
        live = [entry.ack_val, entry.spout_task, entry.start, entry.tag]
        recs.append((root, changelog_value([*live, True] if entry.failed else live)))
        self.ledger.mark_persisted(root)
        self.written += 1
        # The live record supersedes a done record of the same root (a late op
        # re-created it): gc() must not tombstone it after this record.
        self.done.pop(root, None)

    def _all_settled(self, window: YoungTrees) -> bool:
        """Every tree of ``window`` finished (or was persisted); resumes where it stopped."""
        roots = window.roots
        peek = self.ledger.peek
        while window.checked < len(roots):
            seen = peek(roots[window.checked])
            if seen is not None and not seen[1]:
                return False
            window.checked += 1
        return True

    def commit_offset(self, next_offset: int) -> int:
        """How far the input may be committed, given the next offset to read.

        Below the first op of every live tree that is not in the changelog (call after
        :meth:`changelog`'s records are confirmed).
        """
        return min(next_offset, self._young[0].first_offset) if self._young else next_offset

    def gc(self, committed_offset: int) -> list[tuple[int, bytes | None]]:
        """Tombstones for done records whose finishing offset is below ``committed_offset``."""
        gone = [r for r, tag in self.done.items() if offset_of(tag) < committed_offset and r not in self._done_unwritten]
        for r in gone:
            del self.done[r]
        return [(r, None) for r in gone]

    def restore(self, root: int, value: list[Any] | None) -> None:
        """Apply one changelog record (the last one per key wins)."""
        if value is None:
            self.ledger.forget(root)
            self.done.pop(root, None)
        elif len(value) == 1:
            self.ledger.forget(root)
            self.done[root] = int(value[0])
        else:
            val, task, start, tag = value[:4]
            self.done.pop(root, None)
            self.ledger.restore(root, int(val), task, float(start), int(tag), failed=len(value) > 4 and bool(value[4]))
            self.max_tag = max(self.max_tag, int(tag))
            return
        self.max_tag = max(self.max_tag, int(value[0]) if value else -1)

    def __len__(self) -> int:
        return len(self.ledger)
