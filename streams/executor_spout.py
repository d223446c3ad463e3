"""The spout executor (Storm's ``executor/spout/SpoutExecutor``): it knows only :class:`Spout`.

It runs a spout's fixed tasks (:mod:`streams.assignment`), and reads the
``squall.T.__ack_result`` partitions whose numbers are its task ids.

Like Storm's, it tracks every tree in flight (:class:`streams.inflight.InFlightTrees`),
bounds them per task by ``topology.max.spout.pending``, and fails trees past
``topology.message.timeout.secs`` itself. A spout that reads Kafka implements
:class:`streams.source.KafkaSource`; the executor then adds a
:class:`streams.source_feed.SourceFeed` and calls nothing but that protocol.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, Message, TopicPartition

from streams.acker_wire import RESULT_ACK, decode_list
from streams.collector import Router, SpoutOutputCollector
from streams.component import Spout
from streams.config import DEFAULT_MAX_SPOUT_PENDING
from streams.exceptions import DecodeError
from streams.executor import Every, Executor
from streams.inflight import InFlightTrees
from streams.kafka_io import consumer_config, true_end_offsets
from streams.naming import ack_result_topic, component_group
from streams.source import KafkaSource, SourceIO, kafka_source
from streams.source_feed import SourceFeed

log = logging.getLogger("squall.executor.spout")

TIMEOUT_CHECK_SECS = 0.1
"""How often trees in flight are checked against ``topology.message.timeout.secs``."""

MAX_CALLS_PER_ROUND = 2000
"""``next_tuple`` calls per task per loop round, so results and timeouts are not starved."""


@dataclass(slots=True)
class SpoutTask:
    """One task of this executor: its spout copy and collector.

    ``source`` is the same object as ``spout`` when it reads Kafka (else ``None``);
    ``immediate`` holds message ids to ack at once (untracked emits, as Storm does).
    """

    task_id: int
    spout: Spout
    collector: SpoutOutputCollector
    source: KafkaSource | None = None
    immediate: list[Any] = field(default_factory=list)


class SpoutExecutor(Executor):
    """Runs a spout's tasks (see the module docstring)."""

    kind = "spout"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cdef = self.topology.components[self.component]
        self.result_topic = ack_result_topic(self.topology.name)
        self.by_task: dict[int, SpoutTask] = {}
        self.inflight = InFlightTrees()
        self.active = threading.Event()
        """Set while spouts may emit (Storm: activated). Cleared by ``deactivate`` and by a
        drain; results, timeouts and commits go on while it is clear."""
        self.active.set()
        self.draining = False
        group = component_group(self.topology.name, self.component)
        overrides = self.kafka.get("consumer")
        self.results = Consumer(consumer_config(self.bootstrap, group + ".__results", self.conf, overrides))
        proto = kafka_source(self.cdef.obj)
        self.feed = (
            SourceFeed(
                self.component,
                self.topology.name,
                proto,
                self.cdef.num_tasks,
                self.bootstrap,
                Consumer(consumer_config(self.bootstrap, group, self.conf, overrides)),
                self.conf.batch_size,
            )
            if proto is not None
            else None
        )

    # -- tasks -----------------------------------------------------------------------
    def _open_tasks(self) -> None:
        """A spout copy per task, opened (Storm: ``open`` once per task); a Kafka-reading
        spout's source partitions start being read."""
        added: list[SpoutTask] = []
        for index in self.tasks:
            task_id, ctx, spout = self._task_copy(index, Spout)
            immediate: list[Any] = []
            collector = SpoutOutputCollector(
                Router(self.topology, self.component, ctx), task_id, self.produce, self.acks, self._tracker(task_id), immediate.append
            )
            spout.open(self.conf_dict, ctx, collector)
            task = SpoutTask(task_id, spout, collector, kafka_source(spout), immediate)
            if task.source is not None and self.feed is not None:
                task.source.bind(SourceIO(self.dead_letter))
                self.feed.add(index, task.source)
            self.by_task[task_id] = task
            added.append(task)
        if added and self.acks is not None:
            # Results start at the partitions' true end, resolved *before* anything is emitted:
            # OFFSET_END would be resolved by the client later, possibly after the first
            # results of this executor's trees were written (seen under load: a whole
            # window of trees timed out).
            ends = true_end_offsets(self.bootstrap, [(self.result_topic, t.task_id) for t in added], component=self.component)
            self.results.incremental_assign([TopicPartition(self.result_topic, p, off) for (_, p), off in ends.items()])
        if self.feed is not None:
            self.feed.assign_new()
        self.local.add(self.component, [t.task_id for t in added])
        self._assigned()
        log.info("[%s] %s runs tasks %s", self.component, self.worker, sorted(t.task_id for t in added))

    def _close(self, task: SpoutTask) -> None:
        try:
            task.spout.close()
        except Exception:
            log.exception("[%s] task %d close failed", self.component, task.task_id)

    def _tracker(self, task_id: int) -> Any:
        inflight = self.inflight

        def on_tracked(root: int, msg_id: Any) -> None:
            inflight.track(root, task_id, msg_id)

        return on_tracked

    # -- loop pieces -------------------------------------------------------------------
    def _results(self, msgs: list[Message]) -> int:
        """Apply ack results: ``spout.ack``/``spout.fail`` for each tree still in flight."""
        hist = self.stats.hist("complete_latency")
        now = time.monotonic()
        n = 0
        for msg in msgs:
            if msg.error():
                continue
            try:
                results = decode_list(msg.value(), component=self.component, topic=self.result_topic, partition=msg.partition() or 0, offset=msg.offset() or 0)
            except DecodeError as exc:
                self.stats.inc("poison")
                self.dead_letter(msg, str(exc), 0)
                continue
            for op, root, _latency in results:
                tree = self.inflight.settle(root)
                if tree is None:
                    continue
                task = self.by_task.get(tree.task_id)
                if task is None:
                    continue
                n += 1
                if op == RESULT_ACK:
                    self.stats.inc("acked")
                    hist.record(now - tree.emitted_at)
                    task.spout.ack(tree.msg_id)
                else:
                    self.stats.inc("failed")
                    task.spout.fail(tree.msg_id)
        return n

    def _timeouts(self) -> None:
        for tree in self.inflight.expired(self.conf.message_timeout_secs):
            self.stats.inc("failed")
            self.stats.inc("timeouts")
            task = self.by_task.get(tree.task_id)
            if task is not None:
                task.spout.fail(tree.msg_id)

    def drain(self) -> None:
        """Stop emitting for good (SIGTERM): trees in flight finish, and their offsets are
        committed, before the executor is stopped. Thread-safe."""
        self.draining = True
        self.active.clear()

    def _emit(self) -> int:
        if self.draining or not self.active.is_set():
            return 0
        limit = self.conf.max_spout_pending or DEFAULT_MAX_SPOUT_PENDING
        inflight = self.inflight
        total = 0
        for task in list(self.by_task.values()):
            spout = task.spout
            collector = task.collector
            for _ in range(MAX_CALLS_PER_ROUND):
                if inflight.pending(task.task_id) >= limit:
                    break
                before = collector.emitted
                spout.next_tuple()
                if task.immediate:
                    for msg_id in task.immediate:
                        spout.ack(msg_id)
                    self.stats.inc("acked", len(task.immediate))
                    task.immediate.clear()
                if collector.emitted == before:
                    if task.source is not None and task.source.commit_needed:
                        self._commit()  # at-most-once: commit *before* emitting
                        task.source.released()
                        continue
                    break
                total += 1
        return total

    def _flush(self) -> None:
        if self.acks is not None and len(self.acks):
            self.stats.inc("acker_ops", self.acks.flush(self.produce))
        self.producer.poll(0)

    def _commit(self) -> None:
        if self.feed is not None:
            self.feed.commit()

    def _update_gauges(self) -> None:
        s = self.stats
        s.gauges["pending"] = len(self.inflight)
        s.gauges["active"] = 1.0 if self.active.is_set() else 0.0
        s.gauges["draining"] = 1.0 if self.draining else 0.0
        s.gauges["tasks"] = len(self.by_task)
        s.tasks = sorted(self.by_task)
        s.counters["emitted"] = sum(t.collector.emitted for t in self.by_task.values())
        s.counters["transferred"] = sum(t.collector.transferred for t in self.by_task.values())
        s.counters["ignored_results"] = self.inflight.ignored
        if self.feed is not None:
            counters = self.feed.counters()
            s.counters["replayed"] = counters.replayed
            s.counters["poison"] = counters.poison
            s.partition_lag.clear()
            s.partition_lag.update(self.feed.lag())

    def _run(self) -> None:
        conf = self.conf
        self._open_tasks()
        now = time.monotonic()
        flush = Every(conf.flush_interval_secs, now, delay_s=0)
        commit = Every(conf.commit_period_secs, now)
        timeouts = Every(TIMEOUT_CHECK_SECS, now, delay_s=0)
        batch = conf.batch_size
        idle = False
        try:
            while not self.stop_event.is_set():
                fed = self.feed.poll(0.02 if idle and not len(self.inflight) else 0) if self.feed is not None else 0
                done = 0
                if self.acks is not None and self.by_task:
                    done = self._results(self.results.consume(batch, 0.01 if idle and len(self.inflight) else 0))
                emitted = self._emit()
                idle = not (fed or done or emitted)
                if idle and not self.by_task:
                    time.sleep(0.02)
                now = time.monotonic()
                if timeouts.due(now):
                    self._timeouts()
                if flush.due(now):
                    self._flush()
                if commit.due(now):
                    self._commit()
                if self.feed is not None:
                    self.feed.refresh(now)
                self._maybe_stats(now)
        finally:
            self._flush()
            self._commit()
            self._maybe_stats(time.monotonic(), final=True)
            for task in self.by_task.values():
                self._close(task)
            self.producer.flush(5)
            if self.feed is not None:
                self.feed.close()
            self.results.close()
