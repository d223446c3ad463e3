"""The spout executor (Storm's ``executor/spout/SpoutExecutor``): it knows only :class:`Spout`.

It runs a spout's fixed tasks (:mod:`service.control.scheduling`), and reads the
``squall.T.__ack_result`` partitions whose numbers are its task ids.

Like Storm's, it tracks every tree in flight (:class:`streams.runtime.inflight.InFlightTrees`),
bounds them per task (:mod:`streams.runtime.pending_bound`: adaptive, or a fixed
``topology.max.spout.pending``), and fails trees past ``topology.message.timeout.secs``
itself. Each task keeps a durable :class:`streams.monitoring.spout_ledger.TaskLedger` (emits, replays
by cause, outcomes), written to ``squall.T.__ledger`` at every flush in which it changed
and before every offset commit, and continued by the task's next life. A spout that reads
Kafka implements :class:`streams.kafka.source.KafkaSource`; the executor then adds a
:class:`streams.kafka.feed.SourceFeed` and calls nothing but that protocol.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Message, TopicPartition
from typing_extensions import override

from streams.exceptions import DecodeError
from streams.kafka.clients import consumer_config, new_consumer, transit_s, true_end_offsets
from streams.kafka.feed import SourceFeed
from streams.kafka.fetch_gaps import FetchGaps
from streams.kafka.send_now import send_now
from streams.kafka.source import KafkaMessageId, ResumableSource, SourceIO, kafka_source
from streams.model.spout import Spout
from streams.monitoring.ledger_store import ledger_key, read_ledgers
from streams.monitoring.spout_ledger import TaskLedger
from streams.runtime.collectors import SpoutOutputCollectorImpl
from streams.runtime.executor import Every, Executor, ExecutorEnv
from streams.runtime.inflight import InFlightTrees
from streams.runtime.pending_bound import PendingBound
from streams.runtime.routing import Router
from streams.runtime.spout_tasks import SpoutTask, SpoutTasks, make_bound
from streams.runtime.transfer import TupleTransfer
from streams.wire.acker import decode_results
from streams.wire.codec import encode_json
from streams.wire.commits import MAX_FINISHED_RANGES
from streams.wire.naming import ack_result_topic, component_group, ledger_topic, partition_key

log = logging.getLogger("squall.executor.spout")

TIMEOUT_CHECK_SECS = 0.1
"""How often trees in flight are checked against ``topology.message.timeout.secs``."""


class SpoutExecutor(Executor):
    """Runs a spout's tasks (see the module docstring)."""

    kind = "spout"

    def __init__(self, env: ExecutorEnv) -> None:
        super().__init__(env)
        self.cdef = self.topology.components[self.component]
        self.result_topic = ack_result_topic(self.topology.name)
        self.ledger_topic = ledger_topic(self.topology.name)
        self.core = SpoutTasks(InFlightTrees(), self._make_bound(), self.stats)
        """The tasks, the trees in flight and the pending bound (:mod:`streams.runtime.spout_tasks`)."""
        self.by_task = self.core.by_task
        self.inflight = self.core.inflight
        self.bound = self.core.bound
        self.active = threading.Event()
        """Set while spouts may emit (Storm: activated). Cleared by ``deactivate`` and by a
        drain; results, timeouts and commits go on while it is clear."""
        self.active.set()
        self.draining = False
        self.winding = False
        """While draining: whether a spout task still has work in flight that needs no new input (:meth:`~streams.model.spout.Spout.wind_down`)."""
        self.transfer = TupleTransfer(self.produce, self.topology.bolt_topics, max_tuples=self.conf.transfer_batch_size)
        """The collectors' tuples, in a pack per bolt partition; flushed at the end of every round (:mod:`streams.runtime.transfer`)."""
        group = component_group(self.topology.name, self.component)
        overrides = self.kafka.get("consumer")
        self.results = new_consumer(consumer_config(self.bootstrap, group + ".__results", self.conf, overrides))
        self.result_gaps = FetchGaps(self.component)
        """Ack results a fetch skipped are fetched again (:mod:`streams.kafka.fetch_gaps`)."""
        proto = kafka_source(self.cdef.obj)
        source_cfg = consumer_config(self.bootstrap, group, self.conf, overrides)
        self.feed = (
            SourceFeed(
                self.component,
                self.topology.name,
                proto,
                self.cdef.num_tasks,
                self.bootstrap,
                new_consumer(source_cfg),
                self.conf.batch_size,
                config=source_cfg,
                reopen_after_s=self.conf.consumer_reopen_after_secs,
                epoch=self.epoch,
            )
            if proto is not None
            else None
        )

    def _make_bound(self) -> PendingBound:
        """The bound on message ids in flight per task (:func:`streams.runtime.spout_tasks.make_bound`)."""
        return make_bound(self.conf, self.topology, self.component)

    @override
    def _collectors(self) -> list[Any]:
        return [task.collector for task in self.by_task.values()]

    # -- tasks -----------------------------------------------------------------------
    def _open_tasks(self) -> None:
        """A spout copy per task, opened (Storm: ``open`` once per task); a Kafka-reading spout's source partitions start being read."""
        added: list[SpoutTask] = []
        base = self.cdef.task_base
        previous = read_ledgers(
            self.bootstrap, self.ledger_topic, [base + i for i in self.tasks], component=self.component, overrides=self.kafka.get("consumer")
        )
        for index in self.tasks:
            task_id, ctx, spout = self._task_copy(index, Spout)
            before = previous.get(task_id)
            ledger = before.next_life() if before is not None else TaskLedger(self.component, task_id)
            ledger.epoch = self.epoch
            immediate: list[tuple[Any, int]] = []
            collector = SpoutOutputCollectorImpl(
                Router(self.topology, self.component, ctx),
                task_id,
                self.transfer.produce,
                self.acks,
                self.core.tracker(task_id, ledger),
                self.core.untracked(immediate),
                epoch=self.epoch,
                hooks=ctx.hooks,
            )
            collector.tracer = self.tracer
            collector.runs = self.transfer if self.conf.transfer_runs else None
            spout.open(self.conf_dict, ctx, collector)
            task = SpoutTask(task_id, spout, collector, ledger, kafka_source(spout), immediate)
            if task.source is not None and self.feed is not None:
                task.source.bind(SourceIO(self._task_dead_letter(task_id), self._poison_reporter(task_id)))
                if before is not None:
                    self.feed.add(index, task.source, before.epoch, before.commits, before.resumable)
                else:
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
            for (topic, p), off in ends.items():
                self.result_gaps.expect(topic, p, off)
            self.result_gaps.single = len(self.by_task) == 1
        if self.feed is not None:
            self.feed.assign_new()
            self._record_commits()  # where this life starts: the next one starts past a late commit behind it
        self.local.add(self.component, [t.task_id for t in added])
        self._assigned()
        log.info("[%s] %s runs tasks %s", self.component, self.worker, sorted(t.task_id for t in added))

    def _close(self, task: SpoutTask) -> None:
        try:
            task.spout.close()
            self.hook_cleanup(task.task_id)
        except Exception:
            log.exception("[%s] task %d close failed", self.component, task.task_id)

    # -- loop pieces -------------------------------------------------------------------
    def _results(self, msgs: list[Message]) -> int:
        """Apply ack results: ``spout.ack``/``spout.fail`` for each tree still in flight (:meth:`SpoutTasks.settle`)."""
        if not msgs:
            return 0
        n = 0
        wall = time.time()
        transit = self.stats.hist("transit_latency")
        read: dict[int, int] = {}
        for msg in msgs:
            if msg.error():
                continue
            read[msg.partition() or 0] = (msg.offset() or 0) + 1
            hop = transit_s(msg, wall)
            if hop is not None:
                transit.record(hop)
            try:
                results = decode_results(
                    msg.value(), component=self.component, topic=self.result_topic, partition=msg.partition() or 0, offset=msg.offset() or 0
                )
            except DecodeError as exc:
                self.poison(msg, exc)
                continue
            n += self.core.settle(results)
        # Ack results are read once, by this task only, and a new life starts at the end:
        # what was read may be purged (streams.kafka.purge).
        self.purger.committed((self.result_topic, p, off) for p, off in read.items())
        return n

    def _task_dead_letter(self, task_id: int) -> Callable[[Message, str, int, dict[str, str]], None]:
        """:meth:`dead_letter` for one source task: its headers name the task."""

        def dead_letter(msg: Message, reason: str, attempts: int, details: dict[str, str]) -> None:
            self.dead_letter(msg, reason, attempts, {**details, "task": str(task_id)})

        return dead_letter

    def _poison_reporter(self, task_id: int) -> Callable[[Exception, str], None]:
        """Reports a source record a task's translator could not take (cause ``poison``)."""

        def report(exc: Exception, where: str) -> None:
            self.errors.report("poison", task_id, exc=exc, where=where)

        return report

    def _timeouts(self) -> None:
        self.core.timeouts(self.conf.message_timeout_secs)

    def drain(self) -> None:
        """Stop emitting for good (SIGTERM): trees in flight finish, and their offsets are committed, before the executor is stopped.

        Thread-safe.
        """
        self.winding = True  # until the next round asks the spouts
        self.draining = True
        self.active.clear()

    def _emit(self) -> int:
        if self.draining:
            self.winding = any([task.spout.wind_down() for task in self.by_task.values()])
            return 0
        if not self.active.is_set():
            return 0
        return self.core.emit(self._commit)

    def _flush(self, ledgers: bool = True) -> None:
        """Send the tuples held in packs and the buffered acker ops, then (``ledgers``) the ledgers that changed."""
        self.transfer.flush()
        if self.acks is not None and len(self.acks):
            self.stats.inc("acker_ops", self.acks.flush(self.produce))
        if ledgers:
            self._write_ledgers()
        self.producer.poll(0)

    def _caught_up(self, fed: int, emitted: int) -> bool:
        """The round found no new input and holds none back: what it produced may leave at once (:mod:`streams.kafka.send_now`).

        With a feed: it brought nothing and every record fetched was emitted (a spout held at
        its pending bound is not caught up: its downstream sets the pace, not its input). A
        spout without one (transactional, a user's own): it emitted nothing.
        """
        if self.feed is None:
            return not emitted
        return not fed and not self.feed.buffered()

    def _write_ledgers(self) -> None:
        """Write each task's ledger that changed (after the flush's tuples and acker ops, on the same producer).

        A ``kill -9`` loses at most the last flush interval's counts.
        """
        for task in self.by_task.values():
            ledger = task.ledger
            ledger.set_emitted(task.collector.emitted)
            if ledger.dirty:
                self.produce(self.ledger_topic, encode_json(ledger.to_json()), key=ledger_key(self.component, task.task_id), partition=task.task_id)
                ledger.written = ledger.seq

    def dead_letter(self, msg: Message, reason: str, attempts: int, details: Mapping[str, str] | None = None) -> None:
        """Dead-letter ``msg`` (see :meth:`Executor.dead_letter`); it will not be replayed."""
        super().dead_letter(msg, reason, attempts, details)
        mid = KafkaMessageId(msg.topic() or "", msg.partition() or 0, msg.offset() or 0)
        for task in self.by_task.values():
            task.ledger.forget(mid)

    def _commit(self) -> None:
        if self.feed is not None and self.leased():  # a worker without its lease commits nothing (streams.runtime.lease)
            self._write_ledgers()  # every offset committed was emitted by a ledger written before it
            self.feed.commit()
            self._record_commits()

    def _record_commits(self) -> None:
        """Each task's ledger keeps the source offsets the broker confirmed committing, and the finished ranges above them; written at the next flush.

        (:mod:`streams.wire.commits`: a new life starts past a late commit, and does not replay those ranges.)
        """
        assert self.feed is not None
        base = self.cdef.task_base
        for index, fed in self.feed.tasks.items():
            task = self.by_task.get(base + index)
            if task is not None:
                task.ledger.committed({partition_key(t, p): off for (t, p), off in fed.committed.items() if off >= 0})
                if isinstance(task.source, ResumableSource):
                    task.ledger.keep_finished(task.source.finished_above(MAX_FINISHED_RANGES))
        self.stats.counters["fenced_commits"] = self.feed.fenced_commits

    def _update_gauges(self) -> None:
        s = self.stats
        s.gauges["pending"] = self.inflight.message_ids()
        s.gauges["pending_limit"] = self.bound.limit
        s.gauges["active"] = 1.0 if self.active.is_set() else 0.0
        s.gauges["draining"] = 1.0 if self.draining else 0.0
        s.gauges["tasks"] = len(self.by_task)
        s.tasks = sorted(self.by_task)
        s.counters["transferred"] = sum(t.collector.transferred for t in self.by_task.values())
        s.counters["ignored_results"] = self.inflight.ignored
        s.counters["refetched"] = self.result_gaps.refetched + (self.feed.gaps.refetched if self.feed is not None else 0)
        s.counters["consumer_reopens"] = self.feed.commit_watch.reopens if self.feed is not None else 0
        lives: dict[str, int] = {}
        for task in self.by_task.values():
            task.ledger.set_emitted(task.collector.emitted)
            for name, n in task.ledger.this_life().items():
                lives[name] = lives.get(name, 0) + n
        s.counters.update(lives)  # emitted, acked, failed, timeouts, replayed (+ by cause): this life
        if self.feed is not None:
            fed = self.feed.counters()
            s.counters["poison"] = fed.poison
            s.counters["resumed_finished"] = fed.resumed_finished
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
        last = now
        try:
            while not self.stop_event.is_set():
                # After a round that did nothing, the next one blocks on one source, so that an
                # idle spout takes no CPU (Storm's spout wait strategy): the feed while no tree
                # is in flight, else the ack results (a spout without a feed, transactional or
                # a user's own, always waits on its results); with neither, it sleeps.
                fed = self.feed.poll(0.02 if idle and not len(self.inflight) else 0) if self.feed is not None else 0
                done = 0
                acked = self.acks is not None and bool(self.by_task)
                if acked:
                    wait = 0.01 if idle and (len(self.inflight) or self.feed is None) else 0
                    done = self._results(self.result_gaps.consume(self.results, batch, wait))
                emitted = self._emit()
                self.transfer.flush()  # the round's tuples leave now (acks and fails may emit too: a transactional spout's next batch)
                idle = not (fed or done or emitted)
                if idle and not acked and (self.feed is None or not self.by_task):
                    time.sleep(0.02)
                now = time.monotonic()
                if self.core.held:  # the round ended at the pending bound: the topology downstream sets the pace
                    self.stats.inc("held_back_seconds", now - last)
                last = now
                if timeouts.due(now):
                    self._timeouts()
                    self.bound.adjust(self.inflight.oldest_age())
                # Caught up (the feed brought nothing more): the inits of what was emitted go now,
                # not at the next interval (a tree cannot complete before its init reaches the acker).
                if flush.due(now):
                    self._flush()
                elif conf.flush_when_idle and not fed and self.acks is not None and len(self.acks) > 0:
                    self._flush(ledgers=False)  # the ledgers keep their interval
                if conf.flush_when_idle and self._caught_up(fed, emitted):
                    send_now(self.producer)  # the tuples and inits held leave now, not after linger.ms
                if commit.due(now):
                    self._commit()
                    self.purger.maybe_purge()
                if self.feed is not None:
                    self.feed.refresh(now)
                self._maybe_stats(now)
        finally:
            self._flush()
            self._commit()
            self._write_ledgers()  # the last confirmed commit too: a replaced owner's late one cannot move it back unseen
            self.purger.close()
            self._maybe_stats(time.monotonic(), final=True)
            for task in self.by_task.values():
                self._close(task)
            self.transfer.flush()
            self.producer.flush(5)
            if self.feed is not None:
                self.feed.close()
            self.results.close()
