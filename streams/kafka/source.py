"""The protocol between a spout that reads Kafka partitions and its executor.

Storm's ``SpoutExecutor`` knows only ``ISpout``. A Squall spout executor also owns the
Kafka consumers (one process, one poll loop), so a spout that reads Kafka offers it this
small :class:`KafkaSource` protocol, and the executor's :class:`streams.kafka.feed.SourceFeed`
drives it. The executor never names a spout class: :class:`streams.kafka.spout.KafkaSpout`
implements the protocol today, and so can a transactional spout tomorrow.

Per task the executor calls, in this order:

1. ``open(conf, context, collector)`` (the :class:`~streams.model.component.Spout` lifecycle),
   then ``bind(io)`` with a :class:`SourceIO` (how to dead-letter a record);
2. repeatedly: ``on_records(msgs)`` with the records of the source partitions the task
   owns, ``next_tuple()`` / ``ack()`` / ``fail()``, and ``committable()`` whenever it
   commits;
3. ``close()`` when the worker stops.

Example: a minimal source that emits each record's value untracked and commits
everything it has seen::

    >>> from streams.kafka.source import KafkaSource, SourceCounters, SourceIO
    >>> from streams import Spout
    >>> class Echo(Spout):
    ...     first_poll_offset = "earliest"
    ...     def __init__(self):
    ...         self.counters = SourceCounters()
    ...         self.commit_needed = False
    ...         self._buf, self._next = [], {}
    ...     def source_topics(self, topology, component, available=None):
    ...         return ["events"]
    ...     def bind(self, io): self.io = io
    ...     def on_records(self, msgs): self._buf.extend(msgs)
    ...     @property
    ...     def buffered(self): return len(self._buf)
    ...     def committable(self): return dict(self._next)
    ...     def released(self): pass
    ...     def next_tuple(self):
    ...         if self._buf:
    ...             msg = self._buf.pop(0)
    ...             self._next[(msg.topic(), msg.partition())] = msg.offset() + 1
    ...             self.collector.emit([msg.value()])
    >>> isinstance(Echo(), KafkaSource)
    True
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from streams.wire.ids import source_key
from streams.wire.naming import TP

if TYPE_CHECKING:
    from confluent_kafka import Message


"""A source partition: ``(topic, partition)``."""

FIRST_POLL = ("committed", "earliest", "latest")


class KafkaMessageId(NamedTuple):
    """Where a spout tuple's record came from (storm-kafka-client's ``KafkaSpoutMessageId``).

    It is the tuple's message id: the acker's outcome for the tree comes back with it.
    A plain ``(topic, partition, offset)`` tuple compares equal.

    >>> mid = KafkaMessageId("events", 3, 1200)
    >>> mid.partition, mid.tp, mid == ("events", 3, 1200)
    (3, ('events', 3), True)
    """

    topic: str
    partition: int
    offset: int

    @property
    def tp(self) -> TP:
        """The source partition ``(topic, partition)``."""
        return (self.topic, self.partition)

    def tuple_ids(self) -> list[tuple[int, int, int]]:
        """The id of its one spout tuple across replays: ``(source key, offset, path 0)`` (:mod:`streams.state.keyvalue`)."""
        return [(source_key(self.topic, self.partition), self.offset, 0)]


class KafkaRecordsId(NamedTuple):
    """The message id of one tree that carries several records of one source partition.

    See ``squall.spout.tree.records`` and :meth:`streams.model.collector.SpoutOutputCollector.emit_tree`.

    ``offsets`` are the records' offsets, ascending. The tree is acked only when every
    record's tuples are fully processed; if it fails, each record is replayed as a tree of
    its own (a :class:`KafkaMessageId`), so one bad record is isolated and dead-lettered alone.

    >>> rid = KafkaRecordsId("events", 3, (10, 11, 13))
    >>> rid.size, rid.tp, rid.members()[2]
    (3, ('events', 3), KafkaMessageId(topic='events', partition=3, offset=13))
    """

    topic: str
    partition: int
    offsets: tuple[int, ...]

    @property
    def tp(self) -> TP:
        """The source partition ``(topic, partition)``."""
        return (self.topic, self.partition)

    def tuple_ids(self) -> list[tuple[int, int, int]]:
        """The ids of its spout tuples across replays, one per record, in ``offsets`` order."""
        key = source_key(self.topic, self.partition)
        return [(key, off, 0) for off in self.offsets]

    @property
    def size(self) -> int:
        """Records (message ids) in the tree."""
        return len(self.offsets)

    def members(self) -> list[KafkaMessageId]:
        """The message id of each record, in offset order."""
        return [KafkaMessageId(self.topic, self.partition, off) for off in self.offsets]


@dataclass(slots=True)
class SourceCounters:
    """What a source task counted, for the executor's metrics (replays are counted by the executor, by cause: :mod:`streams.monitoring.spout_ledger`).

    ``poison``: records whose translation raised (dead-lettered at once). ``dead_lettered``:
    records sent to the dead-letter topic (poison or out of retries). ``resumed_finished``:
    see below.
    """

    poison: int = 0
    dead_lettered: int = 0
    resumed_finished: int = 0
    """Records above the committed offset that the task's last life had finished: taken as done, not replayed (:class:`ResumableSource`)."""

    def add(self, other: SourceCounters) -> None:
        """Add ``other``'s counts to these (an executor sums its tasks')."""
        self.poison += other.poison
        self.dead_lettered += other.dead_lettered
        self.resumed_finished += other.resumed_finished


class SourceIO:
    """What the executor lends a source task.

    ``dead_letter(msg, reason, attempts, details)`` writes ``msg`` to ``squall.T.__dlq`` with
    headers naming the component, topic, partition and offset (``details``: more headers,
    :func:`streams.wire.dead_letter.dead_letter_headers`), and counts it. ``report_poison(exc,
    where)``, if given, reports a poison record as the component's error
    (:mod:`streams.monitoring.errors`).
    """

    def __init__(self, dead_letter: Callable[[Message, str, int, dict[str, str]], None], report_poison: Callable[[Exception, str], None] | None = None) -> None:
        self.dead_letter = dead_letter
        self.report_poison = report_poison


@runtime_checkable
class KafkaSource(Protocol):
    """A spout that reads Kafka partitions (see the module docstring for the call order).

    Attributes:
      first_poll_offset: where a task starts on a partition with no committed offset of its
        own: ``committed`` (the group's committed offset, else the earliest), ``earliest``
        or ``latest`` (the high watermark of a Fetch response).
      commit_needed: True when the source must see a commit before it may emit more
        (at-most-once: commit first, then emit); the executor commits, then calls
        :meth:`released`.
      counters: a :class:`SourceCounters`.
    Not thread-safe: the executor's thread makes every call.
    """

    first_poll_offset: str
    commit_needed: bool
    counters: SourceCounters

    def source_topics(self, topology: str, component: str, available: list[str] | None = None) -> list[str]:
        """The topics read (``available``: the broker's topic names, for patterns)."""
        ...

    def bind(self, io: SourceIO) -> None:
        """Receive the executor's :class:`SourceIO` (after ``open``)."""
        ...

    def on_records(self, msgs: list[Message]) -> None:
        """Buffer records of the partitions this task owns, in offset order per partition."""
        ...

    @property
    def buffered(self) -> int:
        """Records received but not emitted yet (the feed stops taking records above a bound)."""
        ...

    def committable(self) -> dict[TP, int]:
        """The next offset to commit per source partition (absent: nothing to commit)."""
        ...

    def released(self) -> None:
        """The executor committed after ``commit_needed``: held records may be emitted."""
        ...


@runtime_checkable
class ResumableSource(Protocol):
    """A source that says which offsets above its commit are finished, and skips those its last life finished.

    The executor's feed puts :meth:`finished_above` in each commit's metadata
    (:func:`streams.wire.commits.commit_metadata`) and hands a new life what the committed
    offset's metadata named (:meth:`resume_finished`), before its first records.
    """

    def finished_above(self, most: int) -> dict[TP, list[tuple[int, int]]]:
        """Per source partition, up to ``most`` ``[start, end)`` ranges of finished offsets above :meth:`KafkaSource.committable`."""
        ...

    def resume_finished(self, tp: TP, ranges: list[tuple[int, int]]) -> None:
        """``tp``'s offsets in ``ranges`` were finished by the task's last life: take them as finished, never emit them."""
        ...


@runtime_checkable
class FailureNotes(Protocol):
    """A source told why a message id failed, before ``fail`` (so a dead letter can say why)."""

    def note_failure(self, msg_id: Any, cause: str, root: int, why: str = "") -> None:
        """``msg_id``'s tree ``root`` failed by ``cause``: ``fail`` (a bolt failed it) or ``timeout``.

        ``why``: the fail op's words, e.g. ``[check] ZeroDivisionError: division by zero``.
        """
        ...


def kafka_source(spout: Any) -> KafkaSource | None:
    """``spout`` as a :class:`KafkaSource` if it implements the protocol, else ``None``."""
    return spout if isinstance(spout, KafkaSource) else None


def task_of(topic: str, partition: int, num_tasks: int) -> int:
    """The spout task index (0-based) that owns source partition ``(topic, partition)``.

    ``(crc32(topic) + partition) % num_tasks``, so a new partition always lands on the same
    task.

    >>> task_of("squall.t.lines", 0, 2) != task_of("squall.t.lines", 1, 2)
    True
    """
    return (zlib.crc32(topic.encode()) + partition) % num_tasks
