"""The spout executor's half of :class:`streams.kafka.source.KafkaSource`: reading source partitions.

A :class:`SourceFeed` owns the consumer (assign-only) of one spout executor. It maps each
source partition to the task that owns it (:func:`streams.kafka.source.task_of`), starts reading
it at the position the source asks for (``first_poll_offset``), hands records to the
owning task's source, stops taking records while the sources are full, commits what the
sources say is committable to the spout's group (offsets only: the group has no
members), and reports lag.

It knows the protocol, never a spout class: storm-kafka-client's ``KafkaSpout`` keeps the
same duties inside the spout; here they sit beside it so any Kafka-reading spout shares them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from streams.kafka.clients import committed_with_metadata, recommit, reopen_consumer, true_end_offsets
from streams.kafka.commit_watch import CommitWatch
from streams.kafka.fetch_gaps import FetchGaps
from streams.kafka.source import KafkaSource, ResumableSource, SourceCounters, task_of
from streams.wire.commits import commit_metadata, resume_at
from streams.wire.naming import TP, partition_key

log = logging.getLogger("squall.executor.spout")

SOURCE_REFETCHES = 1
"""A hole in a source partition is fetched again once, then passed over: the embedded broker's
skipped batch is there by then, and on Kafka a transaction marker or a compacted record costs
one fetch more, never a stall (see :mod:`streams.kafka.fetch_gaps`)."""

FULL_BATCHES = 20
"""The sources are full when they hold more than this many batches (``squall.consume.batch``)
of records not emitted yet: the feed then takes nothing from its consumer until they drain."""


def sources_full(buffered: int, batch: int) -> bool:
    """Whether the feed holds back this poll: the sources buffer more than :data:`FULL_BATCHES` batches of ``batch`` records.

    Holding back is not pausing. The consumer keeps fetching in the background until
    librdkafka's prefetch queue reaches ``queued.max.messages.kbytes`` (64 MiB by default;
    the feed's memory bound, settable with the consumer overrides) or
    ``queued.min.messages``, then stops by itself, and the next poll starts from the queued
    records. ``Consumer.pause`` would drop that queue, and on resume every record is fetched
    again: a spout held back by its bound on trees in flight paused and resumed about once a
    second, and each resume cost 0.3-0.6 s without a record (flights, acked: 51k -> 70k
    records/s without it).

    >>> sources_full(10_000, 500), sources_full(10_001, 500)
    (False, True)
    """
    return buffered > FULL_BATCHES * batch


@dataclass(slots=True)
class FedTask:
    """A spout task as the feed sees it: its source, its partitions, what it committed."""

    index: int
    source: KafkaSource
    partitions: list[TP] = field(default_factory=list)
    committed: dict[TP, int] = field(default_factory=dict)
    last_epoch: int = 0
    """The epoch of the task's last life (its ledger), whose confirmed commits are ``last_commits``."""
    last_commits: dict[str, int] = field(default_factory=dict)
    """``"topic[p]" -> offset``: what the broker confirmed committing to the last life (:mod:`streams.wire.commits`)."""
    resumable: Callable[[TP, int], list[tuple[int, int]]] | None = None
    """``(partition, first offset) -> [(start, end), ...]``: what earlier lives finished from there on.

    Its ledger's :meth:`~streams.monitoring.spout_ledger.TaskLedger.resumable`.
    """


class SourceFeed:
    """Reads a Kafka-reading spout's source partitions for the tasks one executor owns.

    Args:
      component: the spout's component id (every log line and error names it).
      topology: the topology name (the own topic is ``squall.<topology>.<component>``).
      prototype: the spout as declared (its topics, pattern and ``first_poll_offset``).
      num_tasks: the spout's task count (fixed at submit).
      bootstrap: ``bootstrap.servers``.
      consumer: an assign-only consumer whose ``group.id`` is the spout's group (its
        committed offsets are the spout's); the feed owns and closes it.
      batch: ``squall.batch.size`` (records per consume).
      config: ``consumer``'s settings: with them a consumer whose commits fail for
        ``reopen_after_s`` seconds is replaced by a new one (:mod:`streams.kafka.commit_watch`);
        without, it is only logged.
      reopen_after_s: ``squall.consumer.reopen.after.secs`` (seconds).
      epoch: this life's claim epoch, in every commit's metadata (:mod:`streams.wire.commits`).
    Not thread-safe: the spout executor's thread makes every call.
    """

    REFRESH_SECS = 5.0

    def __init__(
        self,
        component: str,
        topology: str,
        prototype: KafkaSource,
        num_tasks: int,
        bootstrap: str,
        consumer: Consumer,
        batch: int,
        config: Mapping[str, Any] | None = None,
        reopen_after_s: float = 30.0,
        epoch: int = 0,
    ) -> None:
        self.component = component
        self.topology = topology
        self.prototype = prototype
        self.num_tasks = num_tasks
        self.bootstrap = bootstrap
        self.data = consumer
        self.batch = batch
        self.tasks: dict[int, FedTask] = {}
        self.owner: dict[TP, FedTask] = {}
        self._next_refresh = 0.0
        self.gaps = FetchGaps(component, max_refetches=SOURCE_REFETCHES)
        """Source records a fetch skipped are fetched again, once per hole (:mod:`streams.kafka.fetch_gaps`)."""
        self.config = config
        self.commit_watch = CommitWatch(component, reopen_after_s)
        self.starts: dict[TP, int] = {}
        """Where each source partition was first read from (negative: librdkafka's logical offsets)."""
        self.commit_meta = commit_metadata(epoch)
        self.fenced_commits = 0
        """Source partitions found moved back by a replaced owner's late commit, and started past."""

    # -- tasks -----------------------------------------------------------------------
    def add(
        self,
        index: int,
        source: KafkaSource,
        last_epoch: int = 0,
        last_commits: Mapping[str, int] | None = None,
        resumable: Callable[[TP, int], list[tuple[int, int]]] | None = None,
    ) -> None:
        """Own task ``index`` (its source already opened); call :meth:`assign_new` after.

        ``last_epoch`` and ``last_commits``: the task's last life and the commits the broker
        confirmed to it (its ledger), to start past a replaced owner's late commit.
        ``resumable``: the finished ranges earlier lives left above them (its ledger), which a
        source that can (:class:`~streams.kafka.source.ResumableSource`) does not replay.
        """
        self.tasks[index] = FedTask(index, source, last_epoch=last_epoch, last_commits=dict(last_commits or {}), resumable=resumable)

    def _source_partitions(self) -> list[TP]:
        md = self.data.list_topics(timeout=10)
        out: list[TP] = []
        for topic in self.prototype.source_topics(self.topology, self.component, list(md.topics)):
            meta = md.topics.get(topic)
            if meta is None or meta.error is not None:
                log.warning("[%s] source topic %s is not available yet", self.component, topic)
                continue
            out += [(topic, p) for p in sorted(meta.partitions)]
        return out

    def assign_new(self) -> None:
        """Start reading every source partition of an owned task that is not read yet.

        New tasks, or partitions added to a source topic or matching a pattern.
        """
        if not self.tasks:
            return
        new = [tp for tp in self._source_partitions() if tp not in self.owner and task_of(tp[0], tp[1], self.num_tasks) in self.tasks]
        if not new:
            return
        committed = self._committed(new)
        starts = self._start_offsets(new, committed)
        for tp in new:
            task = self.tasks[task_of(tp[0], tp[1], self.num_tasks)]
            task.partitions.append(tp)
            if tp in committed:
                task.committed[tp] = committed[tp]  # lag is measured from here until the next commit
            self._resume_finished(task, tp, starts[tp])
            self.owner[tp] = task
            self.starts[tp] = starts[tp]
        self.data.incremental_assign([TopicPartition(t, p, starts[(t, p)]) for t, p in new])
        for t, p in new:
            if starts[(t, p)] >= 0:
                self.gaps.expect(t, p, starts[(t, p)])
        log.info("[%s] reading %s", self.component, ", ".join(f"{t}[{p}]" for t, p in new))

    def _resume_finished(self, task: FedTask, tp: TP, start: int) -> None:
        """Hand ``task``'s source the offsets of ``tp`` at or above ``start`` that earlier lives finished."""
        if task.resumable is None or start < 0 or self.prototype.first_poll_offset != "committed" or not isinstance(task.source, ResumableSource):
            return
        ranges = task.resumable(tp, start)
        if ranges:
            task.source.resume_finished(tp, ranges)
            n = sum(b - a for a, b in ranges)
            log.info("[%s] %s[%d]: %d records from offset %d on were finished by an earlier life: not replayed", self.component, tp[0], tp[1], n, start)

    def _committed(self, tps: list[TP]) -> dict[TP, int]:
        """The spout group's committed offsets (partitions with none are absent), each past a replaced owner's late commit (:mod:`streams.wire.commits`)."""
        out: dict[TP, int] = {}
        undo: list[TopicPartition] = []
        for topic in dict.fromkeys(t for t, _ in tps):
            got = committed_with_metadata(self.data, [TopicPartition(t, p) for t, p in tps if t == topic], self.component)
            for p, committed in got.items():
                task = self.tasks[task_of(topic, p, self.num_tasks)]
                key = partition_key(topic, p)
                out[(topic, p)], undone = resume_at(self.component, key, committed, (task.last_epoch, task.last_commits.get(key, -1)))
                self.fenced_commits += undone
                if undone:
                    undo.append(TopicPartition(topic, p, out[(topic, p)], metadata=self.commit_meta))
        recommit(self.data, undo, self.component)
        return out

    def _start_offsets(self, tps: list[TP], committed: dict[TP, int]) -> dict[TP, int]:
        mode = self.prototype.first_poll_offset
        if mode == "committed":
            return {tp: committed.get(tp, OFFSET_BEGINNING) for tp in tps}
        if mode == "earliest":
            return dict.fromkeys(tps, OFFSET_BEGINNING)
        # latest: from Fetch high watermarks (ListOffsets may under-report)
        return true_end_offsets(self.bootstrap, tps, component=self.component)

    def refresh(self, now: float) -> None:
        """Every :data:`REFRESH_SECS`, pick up new source partitions.

        A broker that does not answer (paused, restarting, cut off) is said once a try and
        tried again at the next refresh: it never stops the spout (the first assignment, at
        start-up, still raises).
        """
        if now >= self._next_refresh:
            self._next_refresh = now + self.REFRESH_SECS
            try:
                self.assign_new()
            except KafkaException as exc:
                log.warning("[%s] cannot look for new source partitions now (tried again in %.0f s): %s", self.component, self.REFRESH_SECS, exc)

    # -- data ------------------------------------------------------------------------
    def buffered(self) -> int:
        """Records fetched and not emitted yet, over every task's source."""
        return sum(t.source.buffered for t in self.tasks.values())

    def poll(self, timeout_s: float) -> int:
        """Fetch up to ``batch`` records and hand each to its task; returns how many."""
        if not self.owner:
            return 0
        if sources_full(self.buffered(), self.batch):
            return 0
        n = 0
        owner = self.owner
        for msg in self.gaps.consume(self.data, self.batch, timeout_s):
            if msg.error():
                log.warning("[%s] consumer error: %s", self.component, msg.error())
                continue
            task = owner.get((msg.topic() or "", msg.partition() or 0))
            if task is not None:
                task.source.on_records([msg])
                n += 1
        return n

    def commit(self) -> None:
        """Commit what each owned source says is committable (synchronously)."""
        offsets: list[TopicPartition] = []
        for task in self.tasks.values():
            for tp, off in task.source.committable().items():
                if task.committed.get(tp) != off and tp in self.owner:
                    offsets.append(TopicPartition(tp[0], tp[1], off, metadata=self.commit_meta))
        if not offsets:
            return
        try:
            self.data.commit(offsets=offsets, asynchronous=False)
            self.commit_watch.ok()
            for done in offsets:
                key = (done.topic, done.partition)
                self.owner[key].committed[key] = done.offset
        except KafkaException as exc:
            log.warning("[%s] offset commit failed (will retry): %s", self.component, exc)
            if self.commit_watch.failed(time.monotonic()) and self.config is not None:
                self.reopen()

    def reopen(self) -> None:
        """Replace the consumer by a new one after the last record handed to each task (a lost coordinator)."""
        assert self.config is not None
        positions = []
        for t, p in self.owner:
            due = self.gaps.next_offset(t, p)
            positions.append(TopicPartition(t, p, due if due is not None else self.starts.get((t, p), OFFSET_BEGINNING)))
        self.data = reopen_consumer(self.data, self.config, positions, self.component, self.gaps)

    # -- reporting -------------------------------------------------------------------
    def counters(self) -> SourceCounters:
        """Totals over the tasks."""
        total = SourceCounters()
        for task in self.tasks.values():
            total.add(task.source.counters)
        return total

    def lag(self) -> dict[str, int]:
        """``"topic[p]" -> high watermark - committed`` for every owned partition."""
        out: dict[str, int] = {}
        for task in self.tasks.values():
            for topic, p in task.partitions:
                _, high = self.data.get_watermark_offsets(TopicPartition(topic, p), cached=True)
                if high is not None and high >= 0:
                    out[f"{topic}[{p}]"] = max(0, high - task.committed.get((topic, p), 0))
        return out

    def close(self) -> None:
        """Close the source consumer (commits are the caller's, before this)."""
        self.data.close()
