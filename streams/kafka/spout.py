"""KafkaSpout: a reliable spout over Kafka topics (storm-kafka-client's KafkaSpout).

* **Tasks.** The spout's tasks are the partitions of its own topic ``squall.T.<spout>``
  (group membership). A source partition ``(topic, p)`` belongs to task
  ``(crc32(topic) + p) % num_tasks``, so several topics or a pattern work and a new
  partition always lands on the same task. With no ``topics``, the spout reads its own
  topic, and each task owns exactly one partition.
* **Message id** = ``(topic, partition, offset)``.
* **Trees of several records** (``squall.spout.tree.records``, default 200). At least once,
  each ``next_tuple`` sends the run of buffered records of one source partition, up to that
  many, as **one** tree (:meth:`~streams.runtime.collectors.SpoutOutputCollector.emit_tree`, message id
  :class:`~streams.kafka.source.KafkaRecordsId`): one acker ``init``, ack ops coalesced per root,
  one result, one tree in flight, instead of one of each per record; the spout keeps one
  pending entry (:class:`PendingTree`) and one offset-tracker entry for it. Each record is still its
  own tuple, counted, committed and dead-lettered on its own. If the tree fails (a bolt failed
  one of its tuples, or it timed out), **each** of its records is replayed as a tree of its own
  (a :class:`~streams.kafka.source.KafkaMessageId`), so a bad record costs its tree-mates one replay
  and is then retried and dead-lettered alone. The size adapts per source partition, as TCP's
  window does (AIMD): a failed tree halves it, an acked one adds 1, up to the setting, so a
  bolt that fails often soon gets small trees and few tree-mates are replayed. ``1`` gives
  Storm's tree per record.
* **Processing guarantees** (``processing_guarantee``):
  ``at_least_once`` (default) -- tracked; only the contiguous run of acked (or
  dead-lettered) offsets is committed (:mod:`streams.kafka.offsets`); failed records are
  replayed after an exponential backoff (:mod:`streams.kafka.retry`).
  ``at_most_once`` -- offsets are committed *before* the records are emitted, untracked:
  a failure or crash loses them and nothing is replayed.
  ``none`` -- emitted untracked, offsets committed periodically whatever happens.
* **First poll offset** (``first_poll_offset``): ``committed`` (default; the committed
  offset, else the earliest), ``earliest`` or ``latest`` (both ignore committed offsets).
* **Dead letters.** After ``squall.spout.max.retries`` replays, or when the translator
  raises (a poison record), the record goes to ``squall.T.__dlq`` with headers naming the
  error, component, topic, partition, offset and attempts, and is counted.

The spout executor owns the consumers; it drives this spout only through the
:class:`streams.kafka.source.KafkaSource` protocol (feeding each task the records of its
partitions with :meth:`KafkaSpout.on_records`).

Example (the word count's spout: its own topic, two tasks)::

    >>> from streams import KafkaSpout, TopologyBuilder
    >>> b = TopologyBuilder()
    >>> _ = b.set_spout("lines", KafkaSpout(), 2)
    >>> KafkaSpout(processing_guarantee="twice").validate("lines")
    Traceback (most recent call last):
    ...
    streams.exceptions.TopologyError: [lines] KafkaSpout processing_guarantee must be one of ('at_least_once', 'at_most_once', 'none'), got 'twice'
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from typing_extensions import override

from streams.exceptions import DecodeError, FatalError, TopologyError
from streams.kafka.offsets import OffsetTracker
from streams.kafka.retry import RetryPolicy, RetryQueue
from streams.kafka.source import FIRST_POLL, KafkaMessageId, KafkaRecordsId, SourceCounters, SourceIO
from streams.model.component import OutputFieldsDeclarer
from streams.model.spout import Spout
from streams.model.tuple import DEFAULT_STREAM
from streams.wire.commits import finished_from
from streams.wire.naming import TP, component_topic

if TYPE_CHECKING:
    from confluent_kafka import Message

    from streams.model.collector import SpoutOutputCollector
    from streams.model.context import TopologyContext

GUARANTEES = ("at_least_once", "at_most_once", "none")


@dataclass(slots=True)
class PendingRecord:
    """A tracked record waiting for its tree's outcome (kept to replay it)."""

    msg: Message
    stream: str
    values: list[Any]
    failures: int = 0
    first_failure: float = 0.0
    """Wall-clock seconds of the first failure (0: none yet), and of the last, with its cause and tree."""
    last_failure: float = 0.0
    last_cause: str = ""
    last_why: str = ""
    """What the last failure said (``[check] ZeroDivisionError: division by zero``; ``""``: nothing)."""
    last_root: int = 0
    roots: list[int] = field(default_factory=list)
    """The root ids of every tree of this record that failed, oldest first."""


@dataclass(slots=True)
class PendingTree:
    """A tree of several records waiting for its outcome: one entry for all of them (split into :class:`PendingRecord` s if it fails).

    ``msgs`` and ``items`` (``(stream, values)``) are in the order of the tree's offsets.
    """

    msgs: list[Message]
    items: list[tuple[str, list[Any]]]


class RecordTranslator:
    """Turns a record into ``(stream, values)``, or ``None`` to skip it.

    The default decodes the value as UTF-8 (bad bytes become U+FFFD, never an error)
    into one field. Raise any exception for a record that cannot be translated: it is
    dead-lettered as a poison record.
    """

    def __init__(self, field: str = "value", stream: str = DEFAULT_STREAM) -> None:
        self.field = field
        self.stream = stream

    def streams(self) -> dict[str, tuple[str, ...]]:
        """The streams it emits on, ``{stream: fields}`` (the spout declares them)."""
        return {self.stream: (self.field,)}

    def translate(self, msg: Message) -> tuple[str, list[Any]] | None:
        """``(stream, values)`` for ``msg``, or None to skip it; raise to dead-letter it as poison."""
        value = msg.value()
        if value is None:
            return None
        return self.stream, [value.decode("utf-8", "replace")]


class KafkaSpout(Spout):
    """Reliable spout over ``topics`` or ``pattern`` (default: its own topic ``squall.T.<id>``).

    Args:
      topics: a topic name or a list of them.
      pattern: a regular expression over topic names (instead of ``topics``).
      translator: a :class:`RecordTranslator`.
      retry: replay backoff; default from config (``squall.spout.retry.*``).
      processing_guarantee: ``at_least_once``, ``at_most_once`` or ``none``.
      first_poll_offset: ``committed``, ``earliest`` or ``latest``.

    Raises:
      TopologyError: from :meth:`validate` (called by ``set_spout`` with the component id)
        on both topics and pattern, a bad pattern, or an unknown option.
    """

    def __init__(
        self,
        topics: str | list[str] | None = None,
        *,
        pattern: str | None = None,
        translator: RecordTranslator | None = None,
        retry: RetryPolicy | None = None,
        processing_guarantee: str = "at_least_once",
        first_poll_offset: str = "committed",
    ) -> None:
        self.problems: list[str] = []
        if topics is not None and pattern is not None:
            self.problems.append("KafkaSpout takes topics or pattern, not both")
        if processing_guarantee not in GUARANTEES:
            self.problems.append(f"KafkaSpout processing_guarantee must be one of {GUARANTEES}, got {processing_guarantee!r}")
        if first_poll_offset not in FIRST_POLL:
            self.problems.append(f"KafkaSpout first_poll_offset must be one of {FIRST_POLL}, got {first_poll_offset!r}")
        self.topics = [topics] if isinstance(topics, str) else (list(topics) if topics else None)
        self.pattern: re.Pattern[str] | None = None
        try:
            self.pattern = re.compile(pattern) if pattern else None
        except re.error as exc:
            self.problems.append(f"KafkaSpout pattern {pattern!r} is not a valid regex: {exc}")
        self.translator = translator or RecordTranslator()
        self.retry_policy = retry
        self.processing_guarantee = processing_guarantee
        self.first_poll_offset = first_poll_offset
        # Per-task state, (re)made by open(): one copy of this object runs per task.
        self._collector: SpoutOutputCollector | None = None
        self.component = "?"
        self.io: SourceIO | None = None
        self.counters = SourceCounters()
        self.commit_needed = False
        self.clock: Callable[[], float] = time.monotonic
        """Seconds (monotonic) for replay backoff; the test kit gives its simulated time."""
        self.wall: Callable[[], float] = time.time
        """Wall-clock seconds for a dead letter's failure times; the test kit gives its simulated time."""
        self._retry = RetryQueue(retry or RetryPolicy(), self.clock)
        self._buffer: deque[Message] = deque()
        self._pending: dict[tuple[str, int, int], PendingRecord] = {}
        """Tracked records alone by message id (:class:`KafkaMessageId`, or the equal plain tuple): trees of one, replays, records of a failed tree."""
        self._trees: dict[tuple[str, int, int], PendingTree] = {}
        """Tracked trees of several records by ``(topic, partition, first offset)``: one entry per tree, not per record."""
        self._trackers: dict[TP, OffsetTracker] = {}
        self._resumed: dict[TP, deque[tuple[int, int]]] = {}
        """Per partition: ``[start, end)`` ranges its last life finished above the committed offset, not passed yet (:meth:`resume_finished`)."""
        self._unreleased: list[tuple[str, list[Any]]] = []  # at-most-once: waiting for a commit
        self._released: deque[tuple[str, list[Any]]] = deque()
        self.tree_records = 1
        """Records per tree at least once, at most (``squall.spout.tree.records``; set by :meth:`open`)."""
        self.tree_size: dict[TP, int] = {}
        """Records per tree now, per source partition: AIMD, as TCP's window (halved by a
        failed tree, +1 per acked one, up to :attr:`tree_records`)."""

    def validate(self, component_id: str) -> None:
        """Raise :class:`TopologyError` naming ``component_id`` for a bad option."""
        if self.problems:
            raise TopologyError(f"[{component_id}] {self.problems[0]}")

    @property
    def topic(self) -> str | None:
        """The single explicit source topic, if there is exactly one."""
        return self.topics[0] if self.topics and len(self.topics) == 1 else None

    @property
    def reads_own_topic(self) -> bool:
        """True when it reads its own topic ``squall.T.<id>`` (no topics and no pattern given)."""
        return self.topics is None and self.pattern is None

    def source_topics(self, topology: str, component: str, available: list[str] | None = None) -> list[str]:
        """The topics read: the explicit list, the pattern's matches in ``available``, or the own topic."""
        if self.pattern is not None:
            return sorted(t for t in (available or []) if self.pattern.fullmatch(t) and not t.startswith("__"))
        return list(self.topics) if self.topics else [component_topic(topology, component)]

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        for stream, fields in self.translator.streams().items():
            declarer.declare(fields, stream=stream)

    # -- lifecycle -------------------------------------------------------------------
    @override
    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self._collector = collector
        self.component = context.this_component_id
        config = context.config  # typed, defaults and all: never raw keys here
        policy = self.retry_policy or RetryPolicy(
            initial_delay_s=config.retry_initial_delay_secs,
            multiplier=config.retry_multiplier,
            max_delay_s=config.retry_max_delay_secs,
            max_retries=config.max_retries,
        )
        self._retry = RetryQueue(policy, self.clock)
        self.tree_records = config.tree_records
        self._buffer = deque()
        self._pending = {}
        self._trees = {}
        self._trackers = {}
        self._resumed = {}
        self.tree_size = {}
        self._unreleased = []
        self._released = deque()
        self.commit_needed = False
        self.counters = SourceCounters()

    def bind(self, io: SourceIO) -> None:
        """Receive the executor's services (the dead-letter topic) before the first record."""
        self.io = io

    def on_records(self, msgs: list[Message]) -> None:
        """Buffer records fetched for this task's source partitions (the executor's feed calls it)."""
        self._buffer.extend(msgs)

    @property
    def buffered(self) -> int:
        """Records fetched and not emitted yet (the feed holds back above a mark)."""
        return len(self._buffer) + len(self._released)

    def committable(self) -> dict[TP, int]:
        """The offset to commit per source partition (partitions with no record yet are absent)."""
        return {tp: t.committable for tp, t in self._trackers.items()}

    def finished_above(self, most: int) -> dict[TP, list[tuple[int, int]]]:
        """Per partition, up to ``most`` ranges of finished offsets above the committable one (:class:`~streams.kafka.source.ResumableSource`).

        With the ranges an earlier life finished that this one has not reached yet.
        """
        out: dict[TP, list[tuple[int, int]]] = {}
        for tp in self._trackers.keys() | self._resumed.keys():
            tracker = self._trackers.get(tp)
            ranges = tracker.finished_ranges(most) if tracker is not None else []
            ahead = self._resumed.get(tp)
            if ahead:  # what an earlier life finished that this one has not reached yet: still finished
                ranges = finished_from([*ranges, *ahead], tracker.committable if tracker is not None else 0)[:most]
            if ranges:
                out[tp] = ranges
        return out

    def resume_finished(self, tp: TP, ranges: list[tuple[int, int]]) -> None:
        """``tp``'s offsets in ``ranges`` (sorted ``[start, end)``) were finished by the last life: they are taken as finished when they come, never emitted.

        Only at least once: other guarantees commit without trees.
        """
        if ranges and self.processing_guarantee == "at_least_once":
            self._resumed[tp] = deque(ranges)

    def _finished_before(self, tp: TP, skip: deque[tuple[int, int]], off: int) -> bool:
        """True when ``off`` is in a range the last life finished (counted); passed ranges are dropped.

        The caller passes ``off`` in its tracker: at once for a record alone, or as part of
        the run its tree comes from (a tree's members are handed to the tracker after the
        whole run is read, so passing ``off`` here would put it before them).
        """
        while skip and skip[0][1] <= off:
            skip.popleft()
        if not skip:
            del self._resumed[tp]
            return False
        if off < skip[0][0]:
            return False
        self.counters.resumed_finished += 1
        return True

    def released(self) -> None:
        """At-most-once: the executor committed; the held records may now be emitted."""
        self._released.extend(self._unreleased)
        self._unreleased = []
        self.commit_needed = False

    # -- Spout -----------------------------------------------------------------------
    def _out(self) -> SpoutOutputCollector:
        if self._collector is None:
            raise FatalError(f"[{self.component}] KafkaSpout used before open()")
        return self._collector

    @override
    def next_tuple(self) -> None:
        if self.processing_guarantee == "at_most_once":
            self._next_at_most_once()
            return
        collector = self._out()
        mid = self._retry.pop_due()
        if mid is not None:
            entry = self._pending.get(mid)
            if entry is not None:
                collector.emit(entry.values, msg_id=mid, stream=entry.stream)
                return
        tracked = self.processing_guarantee == "at_least_once"
        if tracked and self.tree_records > 1:
            self._emit_run(collector)
            return
        while self._buffer:
            got = self._take()
            if got is None:
                continue
            mid, msg, stream, values = got
            if tracked:
                self._pending[mid] = PendingRecord(msg, stream, values)
                collector.emit(values, msg_id=mid, stream=stream)
            else:
                self._trackers[mid.tp].finished(mid.offset)
                collector.emit(values, stream=stream)
            return

    def _emit_run(self, collector: SpoutOutputCollector) -> None:
        """Emit buffered records of one source partition as one tree.

        At most the partition's tree size (:attr:`tree_size`, at most :attr:`tree_records`);
        a single record keeps its plain :class:`KafkaMessageId`. Like Storm's ``nextTuple``, one call may take the
        task past ``topology.max.spout.pending`` by less than one tree.

        The spout's hot path (every record of a reliable spout passes here): the partition,
        its tracker and the pending map are looked up once per tree, not once per record; a
        tree of several records is one :class:`PendingTree` and one entry of its
        :class:`~streams.kafka.offsets.OffsetTracker`. A record the tracker has already
        been handed (below its :attr:`~streams.kafka.offsets.OffsetTracker.next`) is dropped:
        its first copy is in flight or finished.
        """
        buffer = self._buffer
        if not buffer:
            return
        head = buffer[0]
        raw_topic, raw_partition = head.topic(), head.partition()
        topic, partition = raw_topic or "", raw_partition or 0
        tracker = self._trackers.get((topic, partition))
        if tracker is None:
            tracker = self._trackers[(topic, partition)] = OffsetTracker(head.offset() or 0)
        most = self.tree_size.get((topic, partition), self.tree_records)
        translate, popleft = self.translator.translate, buffer.popleft
        skip = self._resumed.get((topic, partition)) if self._resumed else None
        items: list[tuple[str, list[Any]]] = []
        msgs: list[Message] = []
        offsets: list[int] = []
        nxt = tracker.next
        while buffer and len(offsets) < most:
            msg = buffer[0]
            if msg.partition() != raw_partition or msg.topic() != raw_topic:
                break
            popleft()
            off = msg.offset() or 0
            if off < nxt:
                continue  # handed twice: the first copy is tracked
            nxt = off + 1
            if skip is not None:
                if self._finished_before((topic, partition), skip, off):
                    continue  # finished: emitted_tree passes it with the run (``end``)
                if not skip:
                    skip = None
            try:
                out = translate(msg)
            except Exception as exc:  # a poison record: dead-letter it and go on (the tracker takes it as finished)
                self._poison(msg, KafkaMessageId(topic, partition, off), exc)
                continue
            if out is None:
                continue  # skipped: finished as the tracker passes it
            items.append(out)
            msgs.append(msg)
            offsets.append(off)
        tracker.emitted_tree(offsets, nxt)
        if not offsets:
            return
        if len(offsets) == 1:
            stream, values = items[0]
            self._pending[(topic, partition, offsets[0])] = PendingRecord(msgs[0], stream, values)
            collector.emit(values, msg_id=KafkaMessageId(topic, partition, offsets[0]), stream=stream)
        else:
            self._trees[(topic, partition, offsets[0])] = PendingTree(msgs, items)
            collector.emit_tree(items, KafkaRecordsId(topic, partition, tuple(offsets)))

    def _next_at_most_once(self) -> None:
        if self._released:
            stream, values = self._released.popleft()
            self._out().emit(values, stream=stream)
            return
        for _ in range(500):
            if not self._buffer:
                break
            got = self._take()
            if got is not None:
                mid, _msg, stream, values = got
                self._trackers[mid.tp].finished(mid.offset)
                self._unreleased.append((stream, values))
                self.commit_needed = True

    def _take(self) -> tuple[KafkaMessageId, Message, str, list[Any]] | None:
        msg = self._buffer.popleft()
        mid = KafkaMessageId(msg.topic() or "", msg.partition() or 0, msg.offset() or 0)
        tracker = self._trackers.get(mid.tp)
        if tracker is None:
            tracker = self._trackers[mid.tp] = OffsetTracker(mid.offset)
        skip = self._resumed.get(mid.tp) if self._resumed else None
        if skip is not None and self._finished_before(mid.tp, skip, mid.offset):
            tracker.passed(mid.offset)
            return None
        tracker.emitted(mid.offset)
        try:
            out = self.translator.translate(msg)
        except Exception as exc:  # a poison record: dead-letter it and go on
            self._poison(msg, mid, exc)
            return None
        if out is None:
            tracker.finished(mid.offset)
            return None
        return mid, msg, out[0], out[1]

    def _poison(self, msg: Message, mid: KafkaMessageId, exc: Exception) -> None:
        """The translator raised on ``msg``: count it and dead-letter it (never replayed)."""
        err = DecodeError(f"{type(exc).__name__}: {exc}", component=self.component, topic=mid.topic, partition=mid.partition, offset=mid.offset)
        self.counters.poison += 1
        if self.io is not None and self.io.report_poison is not None:
            self.io.report_poison(exc, f"{mid.topic}[{mid.partition}]@{mid.offset}")
        self._dead_letter(msg, str(err), 0, mid)

    @override
    def ack(self, msg_id: KafkaMessageId | KafkaRecordsId) -> None:
        tp = msg_id.tp
        size = self.tree_size.get(tp)
        if size is not None and size < self.tree_records:  # additive increase after a failure
            self.tree_size[tp] = size + 1
        tracker = self._trackers.get(tp)
        if isinstance(msg_id, KafkaRecordsId):
            topic, partition = tp
            first = msg_id.offsets[0]
            if self._trees.pop((topic, partition, first), None) is not None:
                if tracker is not None:
                    tracker.finished_tree(first)
                return
            pending = self._pending  # split by an earlier failure: its records are pending alone
            for off in msg_id.offsets:
                if pending.pop((topic, partition, off), None) is not None and tracker is not None:
                    tracker.finished(off)
            return
        if self._pending.pop(msg_id, None) is not None and tracker is not None:
            tracker.finished(msg_id.offset)

    def fail(self, msg_id: KafkaMessageId | KafkaRecordsId) -> None:
        """A tree failed: replay its record (each record of a :class:`KafkaRecordsId`, on its own) after the backoff, or dead-letter it once out of retries."""
        size = msg_id.size if isinstance(msg_id, KafkaRecordsId) else 1
        if self.tree_records > 1:  # multiplicative decrease: half the failed tree's size
            self.tree_size[msg_id.tp] = max(1, min(self.tree_size.get(msg_id.tp, self.tree_records), size) // 2)
        if isinstance(msg_id, KafkaRecordsId):
            self._split(msg_id)
            for mid in msg_id.members():
                self._fail_one(mid)
        else:
            self._fail_one(msg_id)

    def note_failure(self, msg_id: KafkaMessageId | KafkaRecordsId, cause: str, root: int, why: str = "") -> None:
        """Remember why and when each record of ``msg_id`` failed (its dead letter says so; :class:`~streams.kafka.source.FailureNotes`)."""
        now = self.wall()
        if isinstance(msg_id, KafkaRecordsId):
            self._split(msg_id)
        for mid in msg_id.members() if isinstance(msg_id, KafkaRecordsId) else (msg_id,):
            entry = self._pending.get(mid)
            if entry is not None:
                entry.first_failure = entry.first_failure or now
                entry.last_failure, entry.last_cause, entry.last_root, entry.last_why = now, cause, root, why
                entry.roots.append(root)

    def _split(self, msg_id: KafkaRecordsId) -> None:
        """A tree of several records failed: from now on each record is pending, replayed and finished alone."""
        topic, partition = msg_id.tp
        first = msg_id.offsets[0]
        tree = self._trees.pop((topic, partition, first), None)
        if tree is None:
            return  # split already (note_failure comes before fail)
        pending = self._pending
        for msg, (stream, values), off in zip(tree.msgs, tree.items, msg_id.offsets, strict=True):
            pending[(topic, partition, off)] = PendingRecord(msg, stream, values)
        tracker = self._trackers.get(msg_id.tp)
        if tracker is not None:
            tracker.split(first)

    def _fail_one(self, msg_id: KafkaMessageId) -> None:
        entry = self._pending.get(msg_id)
        if entry is None:
            return
        entry.failures += 1
        if self._retry.policy.exhausted(entry.failures):
            del self._pending[msg_id]
            cause = entry.last_cause or "fail"
            details = {"cause": cause}
            if entry.last_why:
                details["why"] = entry.last_why
            if entry.first_failure:
                details.update(
                    {
                        "first.failure": f"{entry.first_failure:.3f}",
                        "last.failure": f"{entry.last_failure:.3f}",
                        "root": str(entry.last_root),
                        "roots": ",".join(str(r) for r in entry.roots),
                    }
                )
            last = f"{cause}: {entry.last_why}" if entry.last_why else cause
            reason = f"[{self.component}] gave up after {entry.failures} failures (the last: {last})"
            self._dead_letter(entry.msg, reason, entry.failures, msg_id, details)
        else:
            self._retry.schedule(msg_id, entry.failures)

    def _dead_letter(self, msg: Message, reason: str, attempts: int, mid: KafkaMessageId, details: dict[str, str] | None = None) -> None:
        if self.io is None:
            raise FatalError(f"[{self.component}] KafkaSpout has no SourceIO: the executor must bind() it after open()")
        self.counters.dead_lettered += 1
        self.io.dead_letter(msg, reason, attempts, details or {"cause": "poison"})
        tracker = self._trackers.get(mid.tp)
        if tracker is not None:
            tracker.finished(mid.offset)
