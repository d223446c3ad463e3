"""KafkaSpout: a reliable spout over Kafka topics (storm-kafka-client's KafkaSpout).

* **Tasks.** The spout's tasks are the partitions of its own topic ``squall.T.<spout>``
  (group membership). A source partition ``(topic, p)`` belongs to task
  ``(crc32(topic) + p) % num_tasks``, so several topics or a pattern work and a new
  partition always lands on the same task. With no ``topics``, the spout reads its own
  topic, and each task owns exactly one partition.
* **Message id** = ``(topic, partition, offset)``.
* **Processing guarantees** (``processing_guarantee``):
  ``at_least_once`` (default) -- tracked; only the contiguous run of acked (or
  dead-lettered) offsets is committed (:mod:`streams.offsets`); failed records are
  replayed after an exponential backoff (:mod:`streams.retry`).
  ``at_most_once`` -- offsets are committed *before* the records are emitted, untracked:
  a failure or crash loses them and nothing is replayed.
  ``none`` -- emitted untracked, offsets committed periodically whatever happens.
* **First poll offset** (``first_poll_offset``): ``committed`` (default; the committed
  offset, else the earliest), ``earliest`` or ``latest`` (both ignore committed offsets).
* **Dead letters.** After ``squall.spout.max.retries`` replays, or when the translator
  raises (a poison record), the record goes to ``squall.T.__dlq`` with headers naming the
  error, component, topic, partition, offset and attempts, and is counted.

The executor (:class:`streams.executor.SpoutExecutor`) owns the consumers; it feeds each
task's spout the records of its partitions with :meth:`KafkaSpout.on_records`.
"""

from __future__ import annotations

import re
import zlib
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streams.component import DEFAULT_STREAM, OutputFieldsDeclarer, Spout
from streams.exceptions import DecodeError, TopologyError
from streams.naming import component_topic
from streams.offsets import OffsetTracker
from streams.retry import RetryPolicy, RetryQueue

if TYPE_CHECKING:
    from confluent_kafka import Message

    from streams.collector import SpoutOutputCollector
    from streams.context import TopologyContext

MsgId = tuple[str, int, int]
TP = tuple[str, int]
GUARANTEES = ("at_least_once", "at_most_once", "none")
FIRST_POLL = ("committed", "earliest", "latest")


def task_of(topic: str, partition: int, num_tasks: int) -> int:
    """The spout task index (0-based) that owns source partition ``(topic, partition)``."""
    return (zlib.crc32(topic.encode()) + partition) % num_tasks


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
        return {self.stream: (self.field,)}

    def translate(self, msg: Message) -> tuple[str, list[Any]] | None:
        value = msg.value()
        if value is None:
            return None
        return self.stream, [value.decode("utf-8", "replace")]


class SourceIO:
    """What the executor lends a KafkaSpout task: how to dead-letter a record."""

    def __init__(self, dead_letter: Callable[[Message, str, int], None]) -> None:
        self.dead_letter = dead_letter


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
      TopologyError: on both topics and pattern, a bad pattern, or an unknown option.
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
        if topics is not None and pattern is not None:
            raise TopologyError("KafkaSpout takes topics or pattern, not both")
        if processing_guarantee not in GUARANTEES:
            raise TopologyError(f"KafkaSpout processing_guarantee must be one of {GUARANTEES}, got {processing_guarantee!r}")
        if first_poll_offset not in FIRST_POLL:
            raise TopologyError(f"KafkaSpout first_poll_offset must be one of {FIRST_POLL}, got {first_poll_offset!r}")
        self.topics = [topics] if isinstance(topics, str) else (list(topics) if topics else None)
        try:
            self.pattern = re.compile(pattern) if pattern else None
        except re.error as exc:
            raise TopologyError(f"KafkaSpout pattern {pattern!r} is not a valid regex: {exc}") from exc
        self.translator = translator or RecordTranslator()
        self.retry_policy = retry
        self.processing_guarantee = processing_guarantee
        self.first_poll_offset = first_poll_offset

    @property
    def topic(self) -> str | None:
        """The single explicit source topic, if there is exactly one."""
        return self.topics[0] if self.topics and len(self.topics) == 1 else None

    @property
    def reads_own_topic(self) -> bool:
        return self.topics is None and self.pattern is None

    def source_topics(self, topology: str, component: str, available: list[str] | None = None) -> list[str]:
        """The topics read: the explicit list, the pattern's matches in ``available``, or the own topic."""
        if self.pattern is not None:
            return sorted(t for t in (available or []) if self.pattern.fullmatch(t) and not t.startswith("__"))
        return list(self.topics) if self.topics else [component_topic(topology, component)]

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        for stream, fields in self.translator.streams().items():
            declarer.declare(fields, stream=stream)

    # -- lifecycle -------------------------------------------------------------------
    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self.collector = collector
        self.component = context.this_component_id
        policy = self.retry_policy or RetryPolicy(
            initial_delay_s=float(conf.get("squall.spout.retry.initial.delay.secs", 0.0)),
            multiplier=float(conf.get("squall.spout.retry.multiplier", 2.0)),
            max_delay_s=float(conf.get("squall.spout.retry.max.delay.secs", 10.0)),
            max_retries=int(conf.get("squall.spout.max.retries", 5)),
        )
        self._retry = RetryQueue(policy)
        self._buffer: deque[Message] = deque()
        self._pending: dict[MsgId, list[Any]] = {}  # msg id -> [msg, stream, values, failures]
        self._trackers: dict[TP, OffsetTracker] = {}
        self._unreleased: list[tuple[str, list[Any]]] = []  # at-most-once: waiting for a commit
        self._released: deque[tuple[str, list[Any]]] = deque()
        self.commit_needed = False
        self.replayed = 0
        self.dead_lettered = 0
        self.poison = 0

    def bind(self, io: SourceIO) -> None:
        self.io = io

    def on_records(self, msgs: list[Message]) -> None:
        self._buffer.extend(msgs)

    def revoke(self, tps: list[TP]) -> None:
        """Forget partitions this task no longer reads (their pending records are dropped)."""
        gone = set(tps)
        for tp in gone:
            self._trackers.pop(tp, None)
        self._buffer = deque(m for m in self._buffer if (m.topic(), m.partition()) not in gone)
        for mid in [mid for mid in self._pending if mid[:2] in gone]:
            del self._pending[mid]

    @property
    def buffered(self) -> int:
        return len(self._buffer) + len(self._released)

    def committable(self) -> dict[TP, int]:
        """The offset to commit per source partition (partitions with no record yet are absent)."""
        return {tp: t.committable for tp, t in self._trackers.items()}

    def released(self) -> None:
        """At-most-once: the executor committed; the held records may now be emitted."""
        self._released.extend(self._unreleased)
        self._unreleased = []
        self.commit_needed = False

    # -- Spout -----------------------------------------------------------------------
    def next_tuple(self) -> None:
        if self.processing_guarantee == "at_most_once":
            self._next_at_most_once()
            return
        mid = self._retry.pop_due()
        if mid is not None:
            entry = self._pending.get(mid)
            if entry is not None:
                self.replayed += 1
                self.collector.emit(entry[2], msg_id=mid, stream=entry[1])
                return
        tracked = self.processing_guarantee == "at_least_once"
        while self._buffer:
            got = self._take()
            if got is None:
                continue
            mid, msg, stream, values = got
            if tracked:
                self._pending[mid] = [msg, stream, values, 0]
                self.collector.emit(values, msg_id=mid, stream=stream)
            else:
                self._trackers[mid[:2]].finished(mid[2])
                self.collector.emit(values, stream=stream)
            return

    def _next_at_most_once(self) -> None:
        if self._released:
            stream, values = self._released.popleft()
            self.collector.emit(values, stream=stream)
            return
        for _ in range(500):
            if not self._buffer:
                break
            got = self._take()
            if got is not None:
                mid, _msg, stream, values = got
                self._trackers[mid[:2]].finished(mid[2])
                self._unreleased.append((stream, values))
                self.commit_needed = True

    def _take(self) -> tuple[MsgId, Message, str, list[Any]] | None:
        msg = self._buffer.popleft()
        topic, part, off = msg.topic() or "", msg.partition() or 0, msg.offset() or 0
        tracker = self._trackers.get((topic, part))
        if tracker is None:
            tracker = self._trackers[(topic, part)] = OffsetTracker(off)
        tracker.emitted(off)
        try:
            out = self.translator.translate(msg)
        except Exception as exc:  # a poison record: dead-letter it and go on
            err = DecodeError(f"{type(exc).__name__}: {exc}", component=self.component, topic=topic, partition=part, offset=off)
            self.poison += 1
            self._dead_letter(msg, str(err), 0, (topic, part, off))
            return None
        if out is None:
            tracker.finished(off)
            return None
        return (topic, part, off), msg, out[0], out[1]

    def ack(self, msg_id: MsgId) -> None:
        if self._pending.pop(msg_id, None) is not None:
            tracker = self._trackers.get((msg_id[0], msg_id[1]))
            if tracker is not None:
                tracker.finished(msg_id[2])

    def fail(self, msg_id: MsgId) -> None:
        mid = msg_id
        entry = self._pending.get(mid)
        if entry is None:
            return
        entry[3] += 1
        if self._retry.policy.exhausted(entry[3]):
            del self._pending[mid]
            self._dead_letter(entry[0], f"[{self.component}] gave up after {entry[3]} failures", entry[3], mid)
        else:
            self._retry.schedule(mid, entry[3])

    def _dead_letter(self, msg: Message, reason: str, attempts: int, mid: MsgId) -> None:
        self.dead_lettered += 1
        self.io.dead_letter(msg, reason, attempts)
        tracker = self._trackers.get(mid[:2])
        if tracker is not None:
            tracker.finished(mid[2])
