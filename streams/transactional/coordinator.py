"""The batch coordinator of a transactional spout, as a pure state machine.

Storm's ``MasterBatchCoordinator``, with storm-kafka-client's per-partition batch metadata.

It decides what the spout does next; the spout (:mod:`streams.transactional.spout`) does
the I/O and persists :meth:`BatchCoordinator.snapshot` to the coordinator topic before it
acts. Rules:

1. **Batches.** A batch is a txid, an attempt and, for each source partition, an offset range
   ``[first, end)``. New batches start where the newest batch in flight ends (or where the
   last committed one ended). At most ``max_pending`` batches are in flight.
2. **Processing** is pipelined: every batch in flight is being processed or is processed.
3. **Commit** strictly in txid order: only batch ``committed + 1``, once processed, and only
   one at a time. When its commit tree is acked, the batch is committed and forgotten, and
   ``next_offsets`` move to its ends.
4. **Failure** (a batch's tree or its commit failed or timed out): that batch and every
   later batch in flight are emitted again with a new attempt (seed point 18).
   * transactional: with the same ranges (a txid always carries the same tuples);
   * opaque: cut again from where the batch before them ends (they may differ), except a
     batch whose commit had started: its content is frozen, since its state may already
     be written.
5. **Restart:** every batch in the snapshot is emitted again (rule 4's way).

Attempt numbers only grow per txid, across restarts too (they are in the snapshot), so
bolts can tell a replay from a stale tuple.

>>> c = BatchCoordinator(CoordinatorState(), opaque=False, max_pending=2, batch_records=10)
>>> a = c.next_action({("t", 0): 25}, starts={("t", 0): 0})
>>> (a.kind, a.batch.txid, a.batch.attempt, a.batch.ranges)
('emit', 1, 1, {('t', 0): (0, 10)})
>>> c.emitted(a.batch)
>>> b = c.next_action({("t", 0): 25}, starts={})
>>> (b.batch.txid, b.batch.ranges)
(2, {('t', 0): (10, 20)})
>>> c.emitted(b.batch); c.next_action({("t", 0): 25}, starts={}) is None  # 2 in flight: the limit
True
>>> c.batch_acked(1, 1); c.next_action({("t", 0): 25}, starts={}).kind
'commit'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from streams.wire.naming import TP

"""A source partition: ``(topic, partition)``."""

Range = tuple[int, int]
"""Offsets ``[first, end)`` of one partition in one batch."""

CutHook = Callable[[int, int, dict[TP, Range]], dict[TP, Range]]
"""``(txid, attempt, proposed ranges) -> ranges`` (an opaque spout may take less)."""


class Phase(StrEnum):
    """Where a batch is in its life: to emit, processing, processed, committing (Storm's transactional phases)."""

    TO_EMIT = "to_emit"
    """Cut (or to be emitted again); not in flight yet."""
    PROCESSING = "processing"
    """Emitted; its tree is in flight."""
    PROCESSED = "processed"
    """Its tree was acked; it waits for its turn to commit."""
    COMMITTING = "committing"
    """Its commit tree is in flight."""


@dataclass
class BatchMeta:
    """One batch: txid, current attempt, ranges, phase; ``frozen`` once its commit started."""

    txid: int
    attempt: int
    ranges: dict[TP, Range]
    phase: Phase = Phase.TO_EMIT
    frozen: bool = False

    def records(self) -> int:
        """How many records the batch's ranges hold."""
        return sum(end - first for first, end in self.ranges.values())


@dataclass
class CoordinatorState:
    """What survives a restart (the coordinator topic's value, JSON).

    ``committed``: the last committed txid (0: none). ``next_offsets``: per partition, the
    offset after everything committed. ``batches``: uncommitted batches by txid.
    ``attempts``: the last attempt number used per uncommitted txid.
    """

    committed: int = 0
    next_offsets: dict[TP, int] = field(default_factory=dict)
    batches: dict[int, BatchMeta] = field(default_factory=dict)
    attempts: dict[int, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The coordinator topic's JSON value (``schemas/coordinator.schema.json``)."""

        def tp(t: TP) -> str:
            return f"{t[0]}:{t[1]}"

        return {
            "committed": self.committed,
            "next_offsets": {tp(k): v for k, v in self.next_offsets.items()},
            "batches": [
                {"txid": b.txid, "attempt": b.attempt, "frozen": b.frozen, "phase": b.phase.value, "ranges": {tp(k): list(r) for k, r in b.ranges.items()}}
                for b in sorted(self.batches.values(), key=lambda b: b.txid)
            ],
            "attempts": {str(k): v for k, v in self.attempts.items()},
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> CoordinatorState:
        """Parse :meth:`to_json`'s form. Raises KeyError/ValueError/TypeError on another."""

        def tp(s: str) -> TP:
            topic, _, p = s.rpartition(":")
            return (topic, int(p))

        batches = {}
        for b in data.get("batches", []):
            ranges = {tp(k): (int(r[0]), int(r[1])) for k, r in b["ranges"].items()}
            batches[int(b["txid"])] = BatchMeta(int(b["txid"]), int(b["attempt"]), ranges, Phase(b.get("phase", "to_emit")), bool(b.get("frozen")))
        return CoordinatorState(
            committed=int(data.get("committed", 0)),
            next_offsets={tp(k): int(v) for k, v in data.get("next_offsets", {}).items()},
            batches=batches,
            attempts={int(k): int(v) for k, v in data.get("attempts", {}).items()},
        )


@dataclass(frozen=True)
class Action:
    """What the spout does next: ``emit`` the batch's tuples, or ``commit`` it."""

    kind: str
    batch: BatchMeta


@dataclass
class CoordinatorCounters:
    """Totals since this coordinator started (batches and records)."""

    emitted: int = 0
    replayed: int = 0
    committed: int = 0
    records_committed: int = 0


class BatchCoordinator:
    """See the module docstring.

    Args:
      state: restored from the coordinator topic (or a new one).
      opaque: opaque (replays may differ) or transactional (replays are identical).
      max_pending: batches in flight at most (``topology.max.spout.pending``).
      batch_records: records per partition per batch at most.
      cut_hook: lets a spout change a new batch's ranges (opaque spouts only).
    Not thread-safe.
    """

    def __init__(self, state: CoordinatorState, opaque: bool, max_pending: int, batch_records: int, cut_hook: CutHook | None = None) -> None:
        self.state = state
        self.opaque = opaque
        self.max_pending = max(1, max_pending)
        self.batch_records = max(1, batch_records)
        self.cut_hook = cut_hook
        self.counters = CoordinatorCounters()
        self._replay_from(min(state.batches, default=state.committed + 1))  # rule 5

    # -- queries ---------------------------------------------------------------------
    @property
    def committed(self) -> int:
        """The last committed txid (0: none)."""
        return self.state.committed

    def in_flight(self) -> list[BatchMeta]:
        """The uncommitted batches, in txid order."""
        return [self.state.batches[t] for t in sorted(self.state.batches)]

    def snapshot(self) -> dict[str, Any]:
        """The state to write to the coordinator topic before acting (see :meth:`CoordinatorState.to_json`)."""
        return self.state.to_json()

    def _cursor(self) -> dict[TP, int]:
        """Where a new batch starts, per partition: the ends of the batches in flight, else ``next_offsets``."""
        cursor = dict(self.state.next_offsets)
        for b in self.in_flight():
            for tp, (_, end) in b.ranges.items():
                cursor[tp] = max(cursor.get(tp, end), end)
        return cursor

    # -- decisions -------------------------------------------------------------------
    def next_action(self, highs: Mapping[TP, int], starts: Mapping[TP, int]) -> Action | None:
        """The next thing to do, given each partition's high watermark ``highs`` and the first offset ``starts`` of partitions never read before.

        None: nothing now.
        """
        batches = self.state.batches
        first = batches.get(self.state.committed + 1)
        if first is not None and first.phase == Phase.PROCESSED:
            return Action("commit", first)
        for b in self.in_flight():
            if b.phase == Phase.TO_EMIT:
                self._new_attempt(b)
                return Action("emit", b)
        if len(batches) >= self.max_pending:
            return None
        cursor = self._cursor()
        proposed: dict[TP, Range] = {}
        for tp, high in highs.items():
            start = cursor.get(tp, starts.get(tp, 0))
            end = min(high, start + self.batch_records)
            if end > start:
                proposed[tp] = (start, end)
        if not proposed:
            return None
        txid = max(batches, default=self.state.committed) + 1
        attempt = self.state.attempts.get(txid, 0) + 1
        ranges = self.cut_hook(txid, attempt, proposed) if self.cut_hook is not None and self.opaque else proposed
        if not ranges:
            return None
        b = batches[txid] = BatchMeta(txid, attempt, ranges)
        self.state.attempts[txid] = attempt
        return Action("emit", b)

    def next_commit(self) -> Action | None:
        """The commit to start now (the next batch in txid order is processed), or None; never a new batch (a drain's step)."""
        first = self.state.batches.get(self.state.committed + 1)
        return Action("commit", first) if first is not None and first.phase == Phase.PROCESSED else None

    def settling(self) -> bool:
        """Whether batches in flight may still commit without a new emit: one is processing or committing, or the next in order is processed.

        A batch waiting to be emitted again (it failed) stops this: the batches after it wait for it.
        """
        return self.next_commit() is not None or any(b.phase in (Phase.PROCESSING, Phase.COMMITTING) for b in self.in_flight())

    def _new_attempt(self, b: BatchMeta) -> None:
        b.attempt = max(b.attempt, self.state.attempts.get(b.txid, 0)) + 1
        self.state.attempts[b.txid] = b.attempt

    # -- outcomes --------------------------------------------------------------------
    def emitted(self, b: BatchMeta) -> None:
        """The spout emitted ``b`` (after persisting the snapshot)."""
        b.phase = Phase.PROCESSING
        self.counters.emitted += 1
        if b.attempt > 1:
            self.counters.replayed += 1

    def commit_started(self, b: BatchMeta) -> None:
        """The spout is about to emit ``b``'s commit: from now on its content is frozen."""
        b.phase = Phase.COMMITTING
        b.frozen = True

    def _current(self, txid: int, attempt: int, phase: Phase) -> BatchMeta | None:
        b = self.state.batches.get(txid)
        return b if b is not None and b.attempt == attempt and b.phase == phase else None

    def batch_acked(self, txid: int, attempt: int) -> None:
        """The processing tree of ``txid.attempt`` completed: it may commit in its turn (a stale outcome is ignored)."""
        b = self._current(txid, attempt, Phase.PROCESSING)
        if b is not None:
            b.phase = Phase.PROCESSED

    def batch_failed(self, txid: int, attempt: int) -> None:
        """The processing tree of ``txid.attempt`` failed or timed out: it and every later batch replay (rule 4)."""
        if self._current(txid, attempt, Phase.PROCESSING) is not None:
            self._replay_from(txid)

    def commit_acked(self, txid: int, attempt: int) -> BatchMeta | None:
        """Batch ``txid`` is committed; returns it (None for a stale outcome)."""
        b = self._current(txid, attempt, Phase.COMMITTING)
        if b is None:
            return None
        del self.state.batches[txid]
        self.state.attempts.pop(txid, None)
        self.state.committed = txid
        for tp, (_, end) in b.ranges.items():
            self.state.next_offsets[tp] = end
        self.counters.committed += 1
        self.counters.records_committed += b.records()
        return b

    def commit_failed(self, txid: int, attempt: int) -> None:
        """The commit of ``txid.attempt`` failed: it and every later batch replay (rule 4)."""
        if self._current(txid, attempt, Phase.COMMITTING) is not None:
            self._replay_from(txid)

    def _replay_from(self, txid: int) -> None:
        """Batch ``txid`` and every later one are emitted again (rule 4)."""
        for t in sorted(self.state.batches):
            if t < txid:
                continue
            b = self.state.batches[t]
            if self.opaque and not b.frozen:
                del self.state.batches[t]  # cut again (rule 4, opaque)
            else:
                b.phase = Phase.TO_EMIT
