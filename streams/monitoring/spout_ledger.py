"""A spout task's durable account: what it emitted, replayed (and why), acked and failed.

Storm counts a replay only when a spout re-emits after ``fail``. Users see more duplicates
than that: a task restarted after a crash, or taken over by another executor, re-reads
every record after the last committed offset, and some of those were emitted by its
previous life. A :class:`TaskLedger` counts **every** re-emission of a message id as a
replay, by cause (:data:`REPLAY_CAUSES`):

* ``fail`` -- the tree failed (an explicit fail, or the acker's timeout);
* ``timeout`` -- the spout executor's own ``topology.message.timeout.secs`` failed the tree;
* ``restart`` -- a new life of the task emitted an offset at or above the committed one
  that its previous life had already emitted (a crash, a takeover, a restart).

The ledger is cumulative across the task's lives: the spout executor writes it to
``squall.T.__ledger`` (partition = the task id) at every flush in which it changed, and a
new life starts from the last one written (:meth:`TaskLedger.next_life`). So totals such as
trees acked do not depend on a worker living long enough to publish them; a ``kill -9``
loses at most the counts of its last flush interval, and then the emits it loses are not
counted as replays either (``emitted == first emits + replayed`` holds in the ledger).

Not thread-safe: the spout executor's thread makes every call.

Example: a first life emits offsets 0..2; offset 1 fails and is replayed; the task is
killed; its next life re-reads from the committed offset 1::

    >>> from streams.kafka.source import KafkaMessageId as M
    >>> life1 = TaskLedger("lines", 0)
    >>> for off in (0, 1, 2):
    ...     life1.emitted_tracked(M("t", 0, off))
    >>> life1.acked_tree()
    >>> life1.failed_tree(M("t", 0, 1), "fail")
    >>> life1.emitted_tracked(M("t", 0, 1))
    >>> life1.set_emitted(4)                       # the collector's count this life
    >>> life1.emitted, life1.replayed, life1.high
    (4, {'fail': 1, 'timeout': 0, 'restart': 0}, {'t[0]': 3})
    >>> life2 = TaskLedger.from_json(life1.to_json()).next_life()
    >>> for off in (1, 2, 3):
    ...     life2.emitted_tracked(M("t", 0, off))
    >>> life2.set_emitted(3)
    >>> life2.life, life2.emitted, life2.replayed["restart"], life2.this_life()["emitted"]
    (2, 7, 2, 3)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streams.exceptions import DecodeError
from streams.kafka.source import KafkaMessageId, KafkaRecordsId
from streams.wire.commits import finished_from
from streams.wire.naming import TP, partition_key

REPLAY_CAUSES = ("fail", "timeout", "restart")
"""Why a message id was emitted again (see the module docstring)."""

COUNTERS = ("emitted", "acked", "failed", "timeouts")
"""The ledger's plain counters (besides ``replayed`` by cause)."""


@dataclass(slots=True)
class TaskLedger:
    """One spout task's cumulative counts and emitted high-water marks.

    Attributes:
      component, task_id: the spout and its global task id.
      life: 1 for the task's first open, +1 for every later one (a restart or a takeover).
      seq: +1 per change; with ``life`` it orders the records of one task.
      emitted: tuples emitted (Storm UI's emitted), first emits and replays.
      acked, failed: message ids whose trees in flight were acked or failed (a tree of
        several records, :class:`~streams.kafka.source.KafkaRecordsId`, counts each record);
        ``timeouts``: those the spout executor failed itself (also in ``failed``).
      replayed: re-emissions by cause, ``{cause: count}``.
      high: ``"topic[p]" -> 1 + the highest offset emitted`` with a :class:`KafkaMessageId`.
      epoch: the claim epoch of the life that wrote it (0: unknown).
      commits: ``"topic[p]" -> the source offset whose commit the broker last confirmed`` to
        this life, or that it started from: a new life starts past a replaced owner's late
        commit behind it (:mod:`streams.wire.commits`).
      finished: ``"topic[p]" -> [[start, end], ...]``: offsets above the last commit that
        were finished (acked or dead-lettered), at most
        :data:`~streams.wire.commits.MAX_FINISHED_RANGES` ranges each; a new life does not
        replay them (:func:`streams.wire.commits.finished_from`).
    """

    component: str
    task_id: int
    life: int = 1
    seq: int = 0
    emitted: int = 0
    acked: int = 0
    failed: int = 0
    timeouts: int = 0
    replayed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REPLAY_CAUSES, 0))
    high: dict[str, int] = field(default_factory=dict)
    restart_below: dict[str, int] = field(default_factory=dict)
    """The previous life's ``high``: an offset below it emitted in this life is a restart replay."""
    causes: dict[Any, str] = field(default_factory=dict)
    """Message ids failed and not yet emitted again -> the cause of their failure."""
    base: dict[str, int] = field(default_factory=dict)
    """The counts when this life began (:meth:`this_life` subtracts them)."""
    written: int = -1
    """The ``seq`` last written to the ledger topic."""
    epoch: int = 0
    commits: dict[str, int] = field(default_factory=dict)
    finished: dict[str, list[list[int]]] = field(default_factory=dict)

    # -- lives -------------------------------------------------------------------------
    def next_life(self) -> TaskLedger:
        """The ledger a new life of this task starts with: the same totals, ``life + 1``, and this life's ``high`` as the bar for restart replays."""
        nxt = TaskLedger(self.component, self.task_id, self.life + 1, self.seq + 1, self.emitted, self.acked, self.failed, self.timeouts)
        nxt.replayed = dict(self.replayed)
        nxt.high = dict(self.high)
        nxt.restart_below = dict(self.high)
        nxt.base = nxt.totals()
        nxt.commits = dict(self.commits)
        nxt.finished = {k: [list(r) for r in v] for k, v in self.finished.items()}
        return nxt

    def committed(self, commits: dict[str, int]) -> None:
        """Source offsets whose commit the broker confirmed, or that this life started from (``"topic[p]" -> offset``); written at the next flush."""
        moved = {k: v for k, v in commits.items() if v > self.commits.get(k, -1)}
        if moved:
            self.commits.update(moved)
            self.seq += 1

    def keep_finished(self, ranges: Mapping[TP, Sequence[tuple[int, int]]]) -> None:
        """The finished ``[start, end)`` ranges above the commits now, per source partition (replacing the last ones); written at the next flush.

        >>> ledger = TaskLedger("lines", 0)
        >>> ledger.keep_finished({("t", 0): [(5, 8), (9, 10)]})
        >>> ledger.finished, ledger.resumable(("t", 0), 6), ledger.resumable(("t", 1), 0)
        ({'t[0]': [[5, 8], [9, 10]]}, [(6, 8), (9, 10)], [])
        """
        kept = {partition_key(t, p): [[a, b] for a, b in rs] for (t, p), rs in ranges.items() if rs}
        if kept != self.finished:
            self.finished = kept
            self.seq += 1

    def resumable(self, tp: TP, start: int) -> list[tuple[int, int]]:
        """The ranges of ``tp`` at or above ``start`` (a new life's first offset) that an earlier life finished (:func:`finished_from`)."""
        return finished_from(self.finished.get(partition_key(*tp), []), start)

    def totals(self) -> dict[str, int]:
        """Cumulative counts: :data:`COUNTERS` and ``replayed_<cause>``, plus ``replayed``."""
        out = {name: int(getattr(self, name)) for name in COUNTERS}
        for cause, n in self.replayed.items():
            out[f"replayed_{cause}"] = n
        out["replayed"] = sum(self.replayed.values())
        return out

    def this_life(self) -> dict[str, int]:
        """:meth:`totals` minus those when this life began (a process's own counters)."""
        return {k: v - self.base.get(k, 0) for k, v in self.totals().items()}

    # -- events ------------------------------------------------------------------------
    def emitted_tracked(self, msg_id: Any) -> None:
        """A tracked emit of ``msg_id``: a replay (counted by cause) if it is one, and the partition's high-water mark.

        (Emits are counted by :meth:`set_emitted`.)
        """
        self.seq += 1
        if isinstance(msg_id, KafkaRecordsId):
            self._emitted_records(msg_id)
            return
        cause = self.causes.pop(msg_id, None) if self.causes else None
        if isinstance(msg_id, KafkaMessageId):
            key = partition_key(msg_id.topic, msg_id.partition)
            if cause is None and msg_id.offset < self.restart_below.get(key, -1):
                cause = "restart"
            if msg_id.offset >= self.high.get(key, 0):
                self.high[key] = msg_id.offset + 1
        if cause is not None:
            self.replayed[cause] += 1

    def _emitted_records(self, rid: KafkaRecordsId) -> None:
        """:meth:`emitted_tracked` for a tree of several records: each is a message id."""
        key = partition_key(rid.topic, rid.partition)
        offsets = rid.offsets
        below = self.restart_below.get(key, -1)
        if self.causes or offsets[0] < below:
            replayed = self.replayed
            for mid in rid.members():
                cause = self.causes.pop(mid, None) if self.causes else None
                if cause is None and mid.offset < below:
                    cause = "restart"
                if cause is not None:
                    replayed[cause] += 1
        if offsets[-1] >= self.high.get(key, 0):
            self.high[key] = offsets[-1] + 1

    def set_emitted(self, this_life: int) -> None:
        """The task's collector has emitted ``this_life`` tuples in this life (tracked or not)."""
        total = self.base.get("emitted", 0) + this_life
        if total != self.emitted:
            self.emitted = total
            self.seq += 1

    def acked_tree(self, n: int = 1) -> None:
        """``n`` trees in flight were acked (or untracked emits acked at once)."""
        self.acked += n
        self.seq += 1

    def failed_tree(self, msg_id: Any, cause: str) -> None:
        """The tree of ``msg_id`` failed for ``cause`` (``fail`` or ``timeout``); the spout may emit it again (a replay of that cause)."""
        if cause not in REPLAY_CAUSES:
            raise ValueError(f"[{self.component}] unknown replay cause {cause!r}")
        members = msg_id.members() if isinstance(msg_id, KafkaRecordsId) else [msg_id]
        if cause == "timeout":
            self.timeouts += len(members)
        self.failed += len(members)
        self.seq += 1
        for mid in members:  # each record of a failed tree is replayed on its own
            self.causes[mid] = cause

    def forget(self, msg_id: Any) -> None:
        """``msg_id`` will not be emitted again (dead-lettered)."""
        self.causes.pop(msg_id, None)

    @property
    def dirty(self) -> bool:
        """Changed since it was last written."""
        return self.seq != self.written

    # -- wire --------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The record written to ``squall.T.__ledger`` (schemas/ledger.schema.json)."""
        return {
            "component": self.component,
            "task": self.task_id,
            "life": self.life,
            "seq": self.seq,
            **{name: getattr(self, name) for name in COUNTERS},
            "replayed": dict(self.replayed),
            "high": dict(self.high),
            "epoch": self.epoch,
            "commits": dict(self.commits),
            "finished": {k: [list(r) for r in v] for k, v in self.finished.items()},
        }

    @classmethod
    def from_json(cls, data: Any, *, reader: str = "?", topic: str = "?", partition: int = -1, offset: int = -1) -> TaskLedger:
        """Parse a ledger record (read by component ``reader`` from ``topic[partition]@offset``).

        Raises:
          DecodeError: naming the record and what is wrong with it.
        """
        try:
            ledger = cls(str(data["component"]), int(data["task"]), int(data["life"]), int(data["seq"]))
            for name in COUNTERS:
                setattr(ledger, name, int(data[name]))
            ledger.replayed = {cause: int(data["replayed"].get(cause, 0)) for cause in REPLAY_CAUSES}
            ledger.high = {str(k): int(v) for k, v in data["high"].items()}
            ledger.epoch = int(data.get("epoch", 0))  # absent in records written before epochs
            ledger.commits = {str(k): int(v) for k, v in data.get("commits", {}).items()}
            ledger.finished = {str(k): [[int(a), int(b)] for a, b in v] for k, v in data.get("finished", {}).items()}  # absent before it
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            component = data.get("component", reader) if isinstance(data, dict) else reader
            reason = f"bad spout ledger record: {type(exc).__name__}: {exc}"
            raise DecodeError(reason, component=str(component), topic=topic, partition=partition, offset=offset) from exc
        ledger.written = ledger.seq
        return ledger

    def newer_than(self, other: TaskLedger | None) -> bool:
        """True if this record supersedes ``other`` (a later life, or a later change)."""
        return other is None or (self.life, self.seq) > (other.life, other.seq)
