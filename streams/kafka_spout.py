"""KafkaSpout: a reliable spout over one Kafka topic (storm-kafka-client's KafkaSpout).

* One task per partition of the source topic; the message id is ``(topic, partition, offset)``.
* Pending records are kept (bounded by ``topology.max.spout.pending``) so a failed one is
  replayed without a re-fetch, after an exponential backoff (:mod:`streams.retry`).
* Only the contiguous run of finished offsets is committed (:mod:`streams.offsets`).
* After ``squall.spout.max.retries`` replays, or when the record translator raises, the
  record goes to the dead-letter topic with headers naming the error, component, topic,
  partition, offset and attempts, and is counted -- never silently dropped.

The executor (:class:`streams.executor.SpoutExecutor`) owns the Kafka consumer and feeds
records to the task's spout with :meth:`KafkaSpout.on_records`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streams.component import DEFAULT_STREAM, OutputFieldsDeclarer, Spout
from streams.exceptions import DecodeError
from streams.naming import component_topic
from streams.offsets import OffsetTracker
from streams.retry import RetryPolicy, RetryQueue

if TYPE_CHECKING:
    from confluent_kafka import Message

    from streams.collector import SpoutOutputCollector
    from streams.context import TopologyContext

MsgId = tuple[str, int, int]


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
    """What the executor lends a KafkaSpout task: where it reads and how it dead-letters."""

    def __init__(self, topic: str, partition: int, dead_letter: Callable[[Message, str, int], None]) -> None:
        self.topic = topic
        self.partition = partition
        self.dead_letter = dead_letter


class KafkaSpout(Spout):
    """Reliable spout over ``topic`` (default: the spout's own topic ``squall.T.<id>``).

    Args:
      topic: source topic; its partitions are this spout's tasks.
      translator: a :class:`RecordTranslator`.
      retry: replay backoff; default from config (``squall.spout.retry.*``).
    """

    def __init__(self, topic: str | None = None, translator: RecordTranslator | None = None, retry: RetryPolicy | None = None) -> None:
        self.topic = topic
        self.translator = translator or RecordTranslator()
        self.retry_policy = retry

    def source_topic(self, topology: str, component: str) -> str:
        return self.topic or component_topic(topology, component)

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
        self._pending: dict[int, list[Any]] = {}  # offset -> [msg, stream, values, failures]
        self._tracker: OffsetTracker | None = None
        self.replayed = 0
        self.dead_lettered = 0
        self.poison = 0

    def bind(self, io: SourceIO) -> None:
        self.io = io

    def on_records(self, msgs: list[Message]) -> None:
        self._buffer.extend(msgs)

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def committable(self) -> int | None:
        """The offset to commit for this task's partition, or None before any record."""
        return self._tracker.committable if self._tracker is not None else None

    # -- Spout -----------------------------------------------------------------------
    def next_tuple(self) -> None:
        off = self._retry.pop_due()
        if off is not None:
            entry = self._pending.get(off)
            if entry is not None:
                self.replayed += 1
                self.collector.emit(entry[2], msg_id=(self.io.topic, self.io.partition, off), stream=entry[1])
                return
        buffer = self._buffer
        while buffer:
            msg = buffer.popleft()
            off = msg.offset() or 0
            if self._tracker is None:
                self._tracker = OffsetTracker(off)
            self._tracker.emitted(off)
            try:
                out = self.translator.translate(msg)
            except Exception as exc:  # a poison record: dead-letter it and go on
                err = DecodeError(f"{type(exc).__name__}: {exc}", component=self.component, topic=msg.topic() or "", partition=msg.partition() or 0, offset=off)
                self.poison += 1
                self._dead_letter(msg, str(err), 0, off)
                continue
            if out is None:
                self._tracker.finished(off)
                continue
            stream, values = out
            self._pending[off] = [msg, stream, values, 0]
            self.collector.emit(values, msg_id=(self.io.topic, self.io.partition, off), stream=stream)
            return

    def ack(self, msg_id: MsgId) -> None:
        off = msg_id[2]
        if self._pending.pop(off, None) is not None and self._tracker is not None:
            self._tracker.finished(off)

    def fail(self, msg_id: MsgId) -> None:
        off = msg_id[2]
        entry = self._pending.get(off)
        if entry is None:
            return
        entry[3] += 1
        if self._retry.policy.exhausted(entry[3]):
            del self._pending[off]
            self._dead_letter(entry[0], f"[{self.component}] gave up after {entry[3]} failures", entry[3], off)
        else:
            self._retry.schedule(off, entry[3])

    def _dead_letter(self, msg: Message, reason: str, attempts: int, off: int) -> None:
        self.dead_lettered += 1
        self.io.dead_letter(msg, reason, attempts)
        if self._tracker is not None:
            self._tracker.finished(off)

    @property
    def waiting_retries(self) -> int:
        return len(self._retry)
