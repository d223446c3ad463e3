"""Executors: the threads that run a component's tasks against Kafka.

An executor is a consumer in the component's group ``squall.T.<component>`` subscribed to
the component's input topic; the partitions Kafka assigns it are its tasks. One
component instance runs per task (as Storm deserialises one per task).

Loop shape (both kinds): consume a batch -> run user code -> every
``squall.flush.interval.secs`` flush outputs, *then* send the coalesced acker ops -> commit.
Flushing outputs before acks means a tree is never acked while its outputs may be lost;
if a delivery fails in the window, the buffered acks are sent as fails instead.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaException, Message, TopicPartition

from acker.wire import RESULT_ACK, decode_list
from streams.codec import decode_tuple, encode_json
from streams.collector import AckBuffer, OutputCollector, Router, SpoutOutputCollector
from streams.component import Bolt, Spout
from streams.config import TopologyConfig
from streams.context import LocalTasks, TopologyContext
from streams.exceptions import DecodeError, FailedException
from streams.kafka_io import consumer_config, make_producer, produce_fn, true_end_offsets
from streams.kafka_spout import KafkaSpout, SourceIO, task_of
from streams.naming import (
    ack_result_topic,
    acker_topic,
    component_group,
    component_topic,
    dead_letter_topic,
    metrics_topic,
)
from streams.stats import ExecutorStats
from streams.topology import Topology
from streams.tuple import Tuple, tick_tuple

log = logging.getLogger("squall.executor")


class Executor:
    """Common parts: producer, acker buffer, stats, dead letters, stop flag."""

    kind = "executor"

    def __init__(
        self,
        topology: Topology,
        component: str,
        conf: TopologyConfig,
        bootstrap: str,
        worker: str = "w0",
        local: LocalTasks | None = None,
        kafka: dict[str, Any] | None = None,
    ) -> None:
        self.topology = topology
        self.component = component
        self.conf = conf
        self.conf_dict = conf.as_dict()
        self.bootstrap = bootstrap
        self.worker = worker
        self.local = local or LocalTasks()
        self.kafka = kafka or {}
        self.stats = ExecutorStats(topology.name, component, self.kind, worker)
        self.stop_event = threading.Event()
        self.producer, self.delivery = make_producer(bootstrap, conf, component, self.kafka.get("producer"))
        self.produce = produce_fn(self.producer)
        self.acks = AckBuffer(acker_topic(topology.name), conf.ackers) if conf.ackers > 0 else None
        self._next_stats = 0.0
        self.error: BaseException | None = None

    def stop(self) -> None:
        self.stop_event.set()

    def all_stats(self) -> list[ExecutorStats]:
        """Every stats object this executor exposes on /metrics."""
        return [self.stats]

    def run(self) -> None:
        """Run until :meth:`stop`; a fatal error is logged with the component id and kept in ``error``."""
        try:
            self._run()
        except BaseException as exc:
            self.error = exc
            log.exception("[%s] executor stopped by a fatal error: %s", self.component, exc)
            raise

    def _run(self) -> None:
        raise NotImplementedError

    def dead_letter(self, msg: Message, reason: str, attempts: int) -> None:
        """Write ``msg`` to ``squall.T.__dlq`` with headers naming where and why; count it."""
        headers = [
            ("squall.error", reason.encode()),
            ("squall.component", self.component.encode()),
            ("squall.topic", (msg.topic() or "").encode()),
            ("squall.partition", str(msg.partition()).encode()),
            ("squall.offset", str(msg.offset()).encode()),
            ("squall.attempts", str(attempts).encode()),
        ]
        self.produce(dead_letter_topic(self.topology.name), msg.value() or b"", key=msg.key(), headers=headers)
        self.stats.inc("dead_lettered")
        log.warning("[%s] dead-lettered %s[%s]@%s after %d attempts: %s", self.component, msg.topic(), msg.partition(), msg.offset(), attempts, reason)

    def _maybe_stats(self, now: float, final: bool = False) -> None:
        if final or now >= self._next_stats:
            self._next_stats = now + self.conf.stats_interval_secs
            self._update_gauges()
            self.produce(metrics_topic(self.topology.name), encode_json(self.stats.snapshot(final)), key=self.stats.instance.encode())

    def _update_gauges(self) -> None:
        """Refresh gauges before a snapshot."""


# ---------------------------------------------------------------------------------------
@dataclass
class _BoltTask:
    task_id: int
    bolt: Bolt
    collector: OutputCollector
    next_offset: int = -1
    flushed_offset: int = -1
    committed_offset: int = -1


class BoltExecutor(Executor):
    """Runs a bolt's tasks (the partitions of ``squall.T.<bolt>`` assigned to it)."""

    kind = "bolt"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cdef = self.topology.components[self.component]
        self.topic = component_topic(self.topology.name, self.component)
        self.tasks: dict[int, _BoltTask] = {}

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            task_id = self.cdef.task_base + tp.partition
            ctx = TopologyContext(self.topology, self.component, task_id, self.worker, self.local)
            ctx.conf = self.conf_dict
            bolt = self.cdef.new_instance()
            assert isinstance(bolt, Bolt)
            collector = OutputCollector(Router(self.topology, self.component, ctx), task_id, self.produce, self.acks)
            bolt.prepare(self.conf_dict, ctx, collector)
            self.tasks[tp.partition] = _BoltTask(task_id, bolt, collector)
        self.local.add(self.component, [self.cdef.task_base + tp.partition for tp in partitions])
        log.info("[%s] %s assigned tasks %s", self.component, self.worker, sorted(self.cdef.task_base + tp.partition for tp in partitions))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # cleanup() first: a bolt that holds tuples (deferred acks, windows) can emit and
        # ack them, and the flush + commit below make that durable before the task moves.
        # Without it, those trees would time out and replay after every rebalance.
        gone = [self.tasks[tp.partition] for tp in partitions if tp.partition in self.tasks]
        for task in gone:
            try:
                task.bolt.cleanup()
            except Exception:
                log.exception("[%s] task %d cleanup failed", self.component, task.task_id)
        self._flush()
        self._commit(consumer, sync=True)
        for task in gone:
            self._emitted_base += task.collector.emitted
            self._acked_base += task.collector.acked
            self._failed_base += task.collector.failed
            del self.tasks[task.task_id - self.cdef.task_base]
        self.local.remove(self.component, [self.cdef.task_base + tp.partition for tp in partitions])

    def _process(self, msg: Message) -> None:
        if msg.error():
            log.warning("[%s] consumer error: %s", self.component, msg.error())
            return
        p = msg.partition() or 0
        task = self.tasks.get(p)
        if task is None:
            return
        off = msg.offset() or 0
        try:
            stream, source, source_task, values, anchors = decode_tuple(msg.value(), component=self.component, topic=self.topic, partition=p, offset=off)
        except DecodeError as exc:
            self.stats.inc("poison")
            self.dead_letter(msg, str(exc), 0)
            task.next_offset = off + 1
            return
        t = Tuple(values, stream, source, source_task, anchors, self.topology.field_index(source, stream), self.topic, p, off)
        self._execute(task, t)
        task.next_offset = off + 1

    def _execute(self, task: _BoltTask, t: Tuple) -> None:
        start = time.perf_counter()
        try:
            task.bolt.execute(t)
        except FailedException:
            task.collector.fail(t)
        except Exception as exc:
            self.stats.inc("errors")
            log.exception("[%s] task %d failed on %s: %s", self.component, task.task_id, t.where, exc)
            task.collector.fail(t)
        self._exec_hist.record(time.perf_counter() - start)

    def _flush(self) -> None:
        before = self.delivery.failures
        self.producer.flush()
        acks = self.acks
        if acks is not None and len(acks):
            if self.delivery.failures != before:
                log.error("[%s] outputs lost in this flush: failing %d trees instead of acking", self.component, len(acks.acks))
                for root in list(acks.acks):
                    acks.fail(root)
            self.stats.inc("acker_ops", acks.flush(self.produce))
            self.producer.poll(0)
        for task in self.tasks.values():
            task.flushed_offset = task.next_offset

    def _commit(self, consumer: Consumer, sync: bool = False) -> None:
        offsets = [
            TopicPartition(self.topic, p, t.flushed_offset) for p, t in self.tasks.items() if t.flushed_offset >= 0 and t.flushed_offset != t.committed_offset
        ]
        if not offsets:
            return
        try:
            if sync:
                consumer.commit(offsets=offsets, asynchronous=False)
            else:
                consumer.commit(offsets=offsets, asynchronous=True)
            for tp in offsets:
                self.tasks[tp.partition].committed_offset = tp.offset
        except KafkaException as exc:
            log.warning("[%s] offset commit failed (will retry): %s", self.component, exc)

    def _update_gauges(self) -> None:
        executed = emitted = acked = failed = 0
        for t in self.tasks.values():
            emitted += t.collector.emitted
            acked += t.collector.acked
            failed += t.collector.failed
        executed = self._exec_hist.count
        self.stats.gauges["tasks"] = len(self.tasks)
        self.stats.tasks = sorted(t.task_id for t in self.tasks.values())
        # Collector counters are per task instance; keep the running maxima as totals.
        self.stats.counters["executed"] = executed
        self.stats.counters["emitted"] = self._emitted_base + emitted
        self.stats.counters["acked"] = self._acked_base + acked
        self.stats.counters["failed"] = self._failed_base + failed

    def _run(self) -> None:
        conf = self.conf
        self._exec_hist = self.stats.hist("execute_latency")
        self._emitted_base = self._acked_base = self._failed_base = 0
        consumer = Consumer(consumer_config(self.bootstrap, component_group(self.topology.name, self.component), conf, self.kafka.get("consumer")))
        consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke)
        tick = conf.tick_tuple_freq_secs
        now = time.monotonic()
        next_tick = now + tick if tick else float("inf")
        next_flush = now + conf.flush_interval_secs
        next_commit = now + conf.commit_period_secs
        batch = conf.batch_size
        try:
            while not self.stop_event.is_set():
                msgs = consumer.consume(batch, conf.flush_interval_secs)
                for msg in msgs:
                    self._process(msg)
                now = time.monotonic()
                if now >= next_tick:
                    next_tick = now + (tick or 0)
                    for task in list(self.tasks.values()):
                        self._execute(task, tick_tuple())
                if now >= next_flush or (self.acks is not None and len(self.acks) > 20000):
                    self._flush()
                    next_flush = now + conf.flush_interval_secs
                if now >= next_commit:
                    self._commit(consumer)
                    next_commit = now + conf.commit_period_secs
                self._maybe_stats(now)
        finally:
            self._flush()
            self._commit(consumer, sync=True)
            for task in self.tasks.values():
                try:
                    task.bolt.cleanup()
                except Exception:
                    log.exception("[%s] task %d cleanup failed", self.component, task.task_id)
            self._flush()
            self._maybe_stats(time.monotonic(), final=True)
            self.producer.flush(5)
            consumer.close()


# ---------------------------------------------------------------------------------------
@dataclass
class _SpoutTask:
    task_id: int
    index: int
    spout: Spout
    collector: SpoutOutputCollector
    pending: int = 0
    sources: list[tuple[str, int]] = field(default_factory=list)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    immediate: list[Any] = field(default_factory=list)


class SpoutExecutor(Executor):
    """Runs a spout's tasks: the partitions of ``squall.T.<spout>`` the group assigns it.

    Three consumers: *membership* (the group; its partitions are paused, so it only
    carries assignments and commits the source offsets), *data* (assign-only: the source
    partitions owned by this executor's tasks, see :func:`streams.kafka_spout.task_of`)
    and *results* (assign-only: ``squall.T.__ack_result`` partitions = its task ids).

    Tracks ``root -> (task, msg_id, emit_time)`` for every tracked tree, bounds in-flight
    trees per task by ``topology.max.spout.pending`` and fails trees past
    ``topology.message.timeout.secs`` itself (as Storm's spout does).
    """

    kind = "spout"
    REFRESH_SECS = 5.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cdef = self.topology.components[self.component]
        self.proto = self.cdef.obj
        self.own_topic = component_topic(self.topology.name, self.component)
        self.result_topic = ack_result_topic(self.topology.name)
        self.tasks: dict[int, _SpoutTask] = {}
        self.owner: dict[tuple[str, int], _SpoutTask] = {}
        self.pending: dict[int, tuple[_SpoutTask, Any, float]] = {}
        self._paused = False
        self._next_refresh = 0.0

    # -- assignment ------------------------------------------------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        consumer.assign(partitions)
        consumer.pause(partitions)  # membership only: never fetch the own topic here
        added: list[_SpoutTask] = []
        for tp in partitions:
            task_id = self.cdef.task_base + tp.partition
            ctx = TopologyContext(self.topology, self.component, task_id, self.worker, self.local)
            ctx.conf = self.conf_dict
            spout = self.cdef.new_instance()
            assert isinstance(spout, Spout)
            task = _SpoutTask(task_id, tp.partition, spout, None)  # type: ignore[arg-type]
            task.collector = SpoutOutputCollector(
                Router(self.topology, self.component, ctx), task_id, self.produce, self.acks, self._tracker_for(task), task.immediate.append
            )
            spout.open(self.conf_dict, ctx, task.collector)
            if isinstance(spout, KafkaSpout):
                spout.bind(SourceIO(self.dead_letter))
            self.tasks[tp.partition] = task
            added.append(task)
        if added and self.acks is not None:
            self.results.incremental_assign([TopicPartition(self.result_topic, t.task_id, OFFSET_END) for t in added])
        self._assign_sources(added)
        self.local.add(self.component, [t.task_id for t in added])
        log.info("[%s] %s assigned tasks %s", self.component, self.worker, sorted(t.task_id for t in added))

    def _source_partitions(self) -> list[tuple[str, int]]:
        if not isinstance(self.proto, KafkaSpout):
            return []
        md = self.data.list_topics(timeout=10)
        topics = self.proto.source_topics(self.topology.name, self.component, list(md.topics))
        out = []
        for topic in topics:
            meta = md.topics.get(topic)
            if meta is None or meta.error is not None:
                log.warning("[%s] source topic %s is not available yet", self.component, topic)
                continue
            out += [(topic, p) for p in sorted(meta.partitions)]
        return out

    def _assign_sources(self, tasks: list[_SpoutTask]) -> None:
        if not isinstance(self.proto, KafkaSpout) or not tasks:
            return
        by_index = {t.index: t for t in tasks}
        n = self.cdef.num_tasks
        new = [tp for tp in self._source_partitions() if tp not in self.owner and task_of(tp[0], tp[1], n) in by_index]
        if not new:
            return
        mode = self.proto.first_poll_offset
        if mode == "committed":
            got = self.consumer.committed([TopicPartition(t, p) for t, p in new], timeout=10)
            starts = {(tp.topic, tp.partition): tp.offset if tp.offset >= 0 else OFFSET_BEGINNING for tp in got}
        elif mode == "earliest":
            starts = dict.fromkeys(new, OFFSET_BEGINNING)
        else:  # latest: from Fetch high watermarks (ListOffsets may under-report)
            starts = true_end_offsets(self.bootstrap, new)
        for tp in new:
            task = by_index[task_of(tp[0], tp[1], n)]
            task.sources.append(tp)
            self.owner[tp] = task
        self.data.incremental_assign([TopicPartition(t, p, starts[(t, p)]) for t, p in new])
        log.info("[%s] reading %s", self.component, ", ".join(f"{t}[{p}]" for t, p in new))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._flush()
        self._commit()
        gone = []
        for tp in partitions:
            task = self.tasks.pop(tp.partition, None)
            if task is None:
                continue
            gone.append(task)
            self._retire(task)
        if gone:
            ids = {id(t) for t in gone}
            for root in [r for r, e in self.pending.items() if id(e[0]) in ids]:
                del self.pending[root]
            if self.acks is not None:
                self.results.incremental_unassign([TopicPartition(self.result_topic, t.task_id) for t in gone])
            sources = [src for t in gone for src in t.sources]
            if sources:
                self.data.incremental_unassign([TopicPartition(t, p) for t, p in sources])
                for src in sources:
                    self.owner.pop(src, None)
            self.local.remove(self.component, [t.task_id for t in gone])

    def _retire(self, task: _SpoutTask) -> None:
        self._base["emitted"] += task.collector.emitted
        if isinstance(task.spout, KafkaSpout):
            self._base["replayed"] += task.spout.replayed
            self._base["poison"] += task.spout.poison
        try:
            task.spout.close()
        except Exception:
            log.exception("[%s] task %d close failed", self.component, task.task_id)

    def _tracker_for(self, task: _SpoutTask) -> Any:
        pending = self.pending

        def on_tracked(root: int, msg_id: Any) -> None:
            pending[root] = (task, msg_id, time.monotonic())
            task.pending += 1

        return on_tracked

    # -- loop pieces -------------------------------------------------------------------
    def _feed(self, msgs: list[Message]) -> int:
        n = 0
        owner = self.owner
        for msg in msgs:
            if msg.error():
                log.warning("[%s] consumer error: %s", self.component, msg.error())
                continue
            task = owner.get((msg.topic() or "", msg.partition() or 0))
            if task is not None and isinstance(task.spout, KafkaSpout):
                task.spout.on_records([msg])
                n += 1
        return n

    def _results(self, msgs: list[Message]) -> int:
        now = time.monotonic()
        hist = self.stats.hist("complete_latency")
        stats = self.stats.counters
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
                entry = self.pending.pop(root, None)
                if entry is None:
                    stats["ignored_results"] = stats.get("ignored_results", 0) + 1
                    continue
                task, msg_id, emitted_at = entry
                task.pending -= 1
                n += 1
                if op == RESULT_ACK:
                    stats["acked"] = stats.get("acked", 0) + 1
                    hist.record(now - emitted_at)
                    task.spout.ack(msg_id)
                else:
                    stats["failed"] = stats.get("failed", 0) + 1
                    task.spout.fail(msg_id)
        return n

    def _timeouts(self, now: float) -> None:
        deadline = now - self.conf.message_timeout_secs
        pending = self.pending
        while pending:
            root = next(iter(pending))
            task, msg_id, emitted_at = pending[root]
            if emitted_at > deadline:
                break
            del pending[root]
            task.pending -= 1
            self.stats.inc("failed")
            self.stats.inc("timeouts")
            task.spout.fail(msg_id)

    def _emit(self) -> int:
        limit = self.conf.max_spout_pending
        total = 0
        for task in list(self.tasks.values()):
            spout = task.spout
            collector = task.collector
            for _ in range(2000):
                if task.pending >= limit:
                    break
                before = collector.emitted
                spout.next_tuple()
                if task.immediate:
                    for msg_id in task.immediate:
                        spout.ack(msg_id)
                    self.stats.inc("acked", len(task.immediate))
                    task.immediate.clear()
                if collector.emitted == before:
                    if isinstance(spout, KafkaSpout) and spout.commit_needed:
                        self._commit()  # at-most-once: commit *before* emitting
                        spout.released()
                        continue
                    break
                total += 1
        return total

    def _flush(self) -> None:
        if self.acks is not None and len(self.acks):
            self.stats.inc("acker_ops", self.acks.flush(self.produce))
        self.producer.poll(0)

    def _commit(self) -> None:
        offsets = []
        for task in self.tasks.values():
            if isinstance(task.spout, KafkaSpout):
                for tp, off in task.spout.committable().items():
                    if task.committed.get(tp) != off and tp in self.owner:
                        offsets.append(TopicPartition(tp[0], tp[1], off))
        if not offsets:
            return
        try:
            self.consumer.commit(offsets=offsets, asynchronous=False)
            for done in offsets:
                key = (done.topic, done.partition)
                self.owner[key].committed[key] = done.offset
        except KafkaException as exc:
            log.warning("[%s] offset commit failed (will retry): %s", self.component, exc)

    def _update_gauges(self) -> None:
        s = self.stats
        s.gauges["pending"] = len(self.pending)
        s.gauges["tasks"] = len(self.tasks)
        s.tasks = sorted(t.task_id for t in self.tasks.values())
        replayed = poison = emitted = 0
        for task in self.tasks.values():
            emitted += task.collector.emitted
            if isinstance(task.spout, KafkaSpout):
                replayed += task.spout.replayed
                poison += task.spout.poison
                for topic, p in task.sources:
                    _, high = self.data.get_watermark_offsets(TopicPartition(topic, p), cached=True)
                    if high is not None and high >= 0:
                        done = task.committed.get((topic, p), 0)
                        s.partition_lag[f"{topic}[{p}]"] = max(0, high - done)
        s.counters["emitted"] = self._base["emitted"] + emitted
        s.counters["replayed"] = self._base["replayed"] + replayed
        s.counters["poison"] = self._base["poison"] + poison

    def _run(self) -> None:
        conf = self.conf
        self._base = {"emitted": 0, "replayed": 0, "poison": 0}
        group = component_group(self.topology.name, self.component)
        consumer_overrides = self.kafka.get("consumer")
        self.consumer = consumer = Consumer(consumer_config(self.bootstrap, group, conf, consumer_overrides))
        self.data = Consumer(consumer_config(self.bootstrap, group + ".__data", conf, consumer_overrides))
        self.results = Consumer(consumer_config(self.bootstrap, group + ".__results", conf, consumer_overrides))
        consumer.subscribe([self.own_topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke)
        now = time.monotonic()
        next_flush = now
        next_commit = now + conf.commit_period_secs
        next_timeout = now
        batch = conf.batch_size
        idle = False
        try:
            while not self.stop_event.is_set():
                consumer.consume(1, 0)  # rebalance callbacks and heartbeats only
                buffered = sum(t.spout.buffered for t in self.tasks.values() if isinstance(t.spout, KafkaSpout))
                self._pause(buffered > 20 * batch)
                fed = self._feed(self.data.consume(batch, 0.02 if idle and not self.pending else 0)) if self.owner else 0
                done = 0
                if self.acks is not None and self.tasks:
                    done = self._results(self.results.consume(batch, 0.01 if idle and self.pending else 0))
                emitted = self._emit()
                idle = not (fed or done or emitted)
                if idle and not self.tasks:
                    time.sleep(0.02)
                now = time.monotonic()
                if now >= next_timeout:
                    self._timeouts(now)
                    next_timeout = now + 0.1
                if now >= next_flush:
                    self._flush()
                    next_flush = now + conf.flush_interval_secs
                if now >= next_commit:
                    self._commit()
                    next_commit = now + conf.commit_period_secs
                if now >= self._next_refresh and isinstance(self.proto, KafkaSpout):
                    self._next_refresh = now + self.REFRESH_SECS
                    self._assign_sources(list(self.tasks.values()))
                self._maybe_stats(now)
        finally:
            self._flush()
            self._commit()
            for task in self.tasks.values():
                self._retire(task)
            self.tasks.clear()
            self._maybe_stats(time.monotonic(), final=True)
            self.producer.flush(5)
            consumer.close()
            self.data.close()
            self.results.close()

    def _pause(self, full: bool) -> None:
        if full == self._paused:
            return
        assignment = self.data.assignment()
        if full:
            self.data.pause(assignment)
        else:
            self.data.resume(assignment)
        self._paused = full
