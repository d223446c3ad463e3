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
3. **Order per flush** (the runtime's job): send ack results and wait for the broker to
   confirm them -> write :meth:`changelog` records and wait -> commit input offsets ->
   write :meth:`gc` tombstones. A crash anywhere replays ops whose effects are either
   skipped (tagged) or redone; the worst case is a *duplicate completion*, which the
   spout ignores and counts. Trees are never lost or failed by a crash.

Changelog value (``schemas/acker-changelog.schema.json``): live ``[val, task|null,
start_s, tag]`` (``[..., tag, true]`` when a fail arrived before the init), done
``[tag]``, tombstone ``null``. A live record written after a done record of the same
root (a late op re-created the entry) drops the done record, so no tombstone follows it. Key: the root, 8 bytes big-endian.
"""

from __future__ import annotations

from typing import Any

from acker.ledger import SKIP, Ledger, Outcome
from streams.acker_wire import OP_ACK, OP_FAIL, OP_INIT, OP_RESET
from streams.codec import encode_json

TAG_BITS = 20
MAX_OPS_PER_RECORD = 1 << TAG_BITS


def tag_of(offset: int, index: int) -> int:
    return (offset << TAG_BITS) | index


def offset_of(tag: int) -> int:
    return tag >> TAG_BITS


class DurableLedger:
    """One acker task's ledger with tags, done records and pending changelog writes."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.done: dict[int, int] = {}  # root -> tag of the op that finished it
        self._dirty: set[int] = set()
        self._done_unwritten: set[int] = set()
        self.max_tag = -1
        self.skipped = 0

    def apply(self, offset: int, ops: list[list[Any]]) -> list[Outcome]:
        """Apply one input record's ops; returns the trees that finished.

        Raises ValueError if a record holds more than 2**20 ops.
        """
        if len(ops) >= MAX_OPS_PER_RECORD:
            raise ValueError(f"record at offset {offset} holds {len(ops)} ops (max {MAX_OPS_PER_RECORD - 1})")
        ledger = self.ledger
        done = self.done
        dirty = self._dirty
        outs: list[Outcome] = []
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
            elif code == OP_RESET:
                out = ledger.reset_timeout(root, tag)
            else:
                raise ValueError(f"unknown acker op {code!r} at offset {offset}")
            if out is SKIP:
                self.skipped += 1
                continue
            dirty.add(root)
            if out is not None:
                self._finished(out, tag)
                outs.append(out)
        if ops:
            self.max_tag = max(self.max_tag, base | (len(ops) - 1))
        return outs

    def _finished(self, out: Outcome, tag: int) -> None:
        if out.persisted:
            self.done[out.root] = tag
            self._done_unwritten.add(out.root)

    def expire(self) -> list[Outcome]:
        """Timed-out trees (RotatingMap tick)."""
        outs = self.ledger.tick()
        for out in outs:
            self._dirty.add(out.root)
            self._finished(out, self.max_tag)
        return outs

    def changelog(self) -> list[tuple[int, bytes | None]]:
        """Records to write now: ``(root, value)``; marks live entries persisted."""
        ledger = self.ledger
        recs: list[tuple[int, bytes | None]] = []
        for root in self._dirty:
            entry = ledger.get(root)
            if entry is not None:
                live = [entry.ack_val, entry.spout_task, entry.start, entry.tag]
                recs.append((root, encode_json([*live, True] if entry.failed else live)))
                ledger.mark_persisted(root)
                # The live record supersedes a done record of the same root (a late op
                # re-created it): gc() must not tombstone it after this record.
                self.done.pop(root, None)
            elif root in self._done_unwritten:
                recs.append((root, encode_json([self.done[root]])))
        self._dirty.clear()
        self._done_unwritten.clear()
        return recs

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
