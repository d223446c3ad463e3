"""The executor base: what every executor (spout, bolt, acker, Spark driver) shares.

An executor owns a fixed range of its component's tasks (:mod:`service.control.scheduling`),
which are partitions of the component's input topic; it reads them with ``assign()`` and
commits its offsets to the group ``squall.T.<component>`` (used for offsets only, never
for membership). One copy of the component runs per task (as Storm deserialises one per
task). An executor runs on one thread of a worker process (:mod:`service.worker.process`), from
:meth:`Executor.run` until :meth:`Executor.stop`.

Loop shape (every kind): consume a batch -> run user code -> every
``squall.flush.interval.secs`` flush outputs, *then* send the coalesced acker ops -> commit.
Flushing outputs before acks means a tree is never acked while its outputs may be lost;
if a delivery fails in the window, the buffered acks are sent as fails instead. A bolt does
not stop executing for it at full speed: its acker ops wait with their flush until the broker
confirmed the outputs (:mod:`streams.runtime.flush_pipeline`).

The kinds live in their own modules, as in Storm's ``executor/`` package:
:mod:`streams.runtime.spout`, :mod:`streams.runtime.bolt`, and the acker's
:mod:`acker.runtime_native`.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, TopicPartition

from streams.config import TopologyConfig
from streams.exceptions import FatalError
from streams.kafka.changelog_store import ChangelogKvStore
from streams.kafka.clients import ProducedBytes, committed_offsets, make_producer, new_admin, produce_fn
from streams.kafka.purge import Purger
from streams.model.component import Component
from streams.model.context import LocalTasks, TopologyContext
from streams.model.io import DeadLetterWriter, ExecutorIO
from streams.model.spec import Topology
from streams.monitoring.errors import ErrorLog, ErrorThrottle
from streams.monitoring.gc_time import PROCESS_GC
from streams.monitoring.stats import ExecutorStats, process_usage
from streams.monitoring.trace import Tracer, threshold
from streams.runtime.acks import AckBuffer
from streams.runtime.fencing import new_epoch
from streams.runtime.lease import PAUSED_SNAPSHOT_S, WorkerLease
from streams.state import OpenedStores
from streams.wire.codec import encode_json, encode_marker
from streams.wire.naming import acker_topic, component_topic, errors_topic, metrics_topic, trace_topic

log = logging.getLogger("squall.executor")

C = TypeVar("C", bound=Component)


class Every:
    """A period timer on the caller's monotonic clock.

    :meth:`due` is True at most once per ``period_s`` seconds, the first time at
    ``start + delay_s`` (default: one period after ``start``).

    >>> t = Every(1.0, start=10.0)
    >>> [t.due(now) for now in (10.5, 11.0, 11.2, 12.1)]
    [False, True, False, True]
    """

    __slots__ = ("next_at", "period_s")

    def __init__(self, period_s: float, start: float, delay_s: float | None = None) -> None:
        self.period_s = period_s
        self.next_at = start + (period_s if delay_s is None else delay_s)

    def due(self, now: float) -> bool:
        """True at most once per period, when ``now`` (monotonic seconds) reached the next time."""
        if now < self.next_at:
            return False
        self.next_at = now + self.period_s
        return True


@dataclass(frozen=True, kw_only=True)
class ExecutorEnv:
    """What an executor of any kind is built from.

    One typed path: the worker makes one per executor and looks the kind's class up in one
    table, ``service.worker.process.EXECUTOR_KINDS``.

    Attributes:
      topology: the validated topology (every worker loads the same one).
      component: the component id this executor runs (``ACKER_COMPONENT`` for ackers).
      conf: the component's resolved, typed config (defaults < service < topology < component).
      bootstrap: ``bootstrap.servers``.
      worker: the worker's name (``w0``...), for logs and metrics.
      local: the tasks running in this worker process (local-or-shuffle grouping); shared
        by the worker's executors.
      kafka: client overrides ``{"consumer": {...}, "producer": {...}}``.
      tasks: the task indexes this executor owns (partitions of its input topic); None:
        every task of the component.
      topology_file: the topology's source file (a SparkBolt's driver loads it again).
      topology_overrides: topology config added at submit or rebalance (Storm keys).
      service_conf: the service config layer (Storm keys).
      workdir: the worker's working directory (ready files, Spark checkpoints).
      lease: the worker's lease on its tasks under ``squall serve``
        (:mod:`streams.runtime.lease`); None: no lease (``squall run``, tests).
      epoch: the worker's claim epoch, carried by every tuple and acker record it writes
        (:mod:`streams.runtime.fencing`); by default the time the env was made, in ms.
    """

    topology: Topology
    component: str
    conf: TopologyConfig
    bootstrap: str
    worker: str = "w0"
    local: LocalTasks = field(default_factory=LocalTasks)
    kafka: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    tasks: tuple[int, ...] | None = None
    topology_file: str = ""
    topology_overrides: Mapping[str, Any] = field(default_factory=dict)
    service_conf: Mapping[str, Any] = field(default_factory=dict)
    workdir: Path = Path()
    lease: WorkerLease | None = None
    epoch: int = field(default_factory=new_epoch)


class Executor(DeadLetterWriter):
    """Common parts: producer, acker buffer, stats, dead letters, stop flag.

    It is its tasks' :class:`~streams.model.io.DeadLetters` (a :class:`~streams.model.io.DeadLetterWriter`
    on its producer, counting ``dead_lettered``); the spout executor adds to ``dead_letter``.

    Args:
      env: what it runs and where (:class:`ExecutorEnv`).
    Thread safety: :meth:`stop` may be called from any thread; everything else runs on
    the executor's own thread.
    """

    kind = "executor"

    def __init__(self, env: ExecutorEnv) -> None:
        self.env = env
        self.topology = env.topology
        self.component = env.component
        self.conf = env.conf
        self.conf_dict = env.conf.as_dict()
        self.bootstrap = env.bootstrap
        self.worker = env.worker
        self.local = env.local
        self.kafka: dict[str, dict[str, Any]] = {k: dict(v) for k, v in env.kafka.items()}
        topology, component, conf, bootstrap, worker, tasks = env.topology, env.component, env.conf, env.bootstrap, env.worker, env.tasks
        self.stats = ExecutorStats(topology.name, component, self.kind, worker)
        self.stop_event = threading.Event()
        self.producer, self.delivery = make_producer(bootstrap, conf, component, self.kafka.get("producer"))
        self.produced = ProducedBytes()
        self.produce = produce_fn(self.producer, self.produced)
        DeadLetterWriter.__init__(self, topology.name, component, self.produce, lambda: self.stats.inc("dead_lettered"))
        self.tasks: tuple[int, ...] = tuple(range(self._task_count())) if tasks is None else tuple(tasks)
        self.epoch = env.epoch
        self.place = f"{socket.gethostname()}:{env.workdir.resolve()}"
        """Where this executor runs (host and supervisor directory), in its progress records: a re-execution here is a ``restart``, elsewhere a ``takeover``."""
        """This worker's claim epoch: every tuple and acker record written here carries it (:mod:`streams.runtime.fencing`)."""
        self.acks = AckBuffer(acker_topic(topology.name), conf.ackers, self.first_task(), self.epoch) if conf.ackers > 0 else None
        self.io = ExecutorIO(
            bootstrap,
            self.kafka,
            dead_letters=self,
            stores=OpenedStores(open_changelog=lambda: ChangelogKvStore(bootstrap, self.kafka, component)),
            epoch=env.epoch,
            latency=lambda name: self.stats.hist(name).record,  # TopologyContext.register_latency
        )
        purging = conf.purge_interval_secs > 0
        admin = new_admin({"bootstrap.servers": bootstrap, "log_level": 3, **self.kafka.get("admin", {})}) if purging else None
        self.purger = Purger(component, conf.purge_interval_secs, admin)
        """Deletes the input records this executor committed (:mod:`streams.kafka.purge`)."""
        self._contexts: list[TopologyContext] = []
        self._next_stats = 0.0
        self.errors = ErrorLog(
            topology.name,
            component,
            worker,
            ErrorThrottle(conf.error_throttle_interval_secs, conf.max_error_report_per_interval, time.monotonic),
            self._publish_error,
            conf.errors_kept_per_task,
            time.time,
            os.getpid(),
            ErrorThrottle(conf.error_throttle_interval_secs, conf.errors_brief_per_interval, time.monotonic),
            max(1, conf.errors_brief_per_interval),
        )
        """This executor's errors (``squall errors``; :mod:`streams.monitoring.errors`)."""
        self.stats.errors = self.errors.counts
        self.tracer = Tracer(component, worker, conf.trace_sample_rate, self._publish_trace) if conf.debug else None
        """Sampled tracing (``topology.debug``; :mod:`streams.monitoring.trace`), else None."""
        self.trace_request: tuple[float] | None = None
        """A sample rate (0..1; 0: off) another thread asked for (:meth:`request_trace`), applied by this executor's loop."""
        self.error: BaseException | None = None
        self.assigned = threading.Event()
        """Set once this executor has opened its tasks and, for an acker, restored its
        table: the worker's readiness."""
        self.beat = time.monotonic()
        """When the executor's loop last came round (monotonic seconds): its heartbeat."""
        self.start_offsets: dict[int, int] = {}
        """Where :meth:`_assign` started each input partition (negative: librdkafka's logical offsets)."""
        self.lease = env.lease
        """The worker's lease (:mod:`streams.runtime.lease`): while it is not held, :meth:`_maybe_stats` holds the loop."""

    def stop(self) -> None:
        """Ask the loop to finish: it flushes, commits and publishes final stats."""
        self.stop_event.set()

    def all_stats(self) -> list[ExecutorStats]:
        """Every stats object this executor exposes on /metrics."""
        return [self.stats]

    def run(self) -> None:
        """Run until :meth:`stop`; a fatal error is logged with the component id and kept in ``error``."""
        try:
            self._maybe_stats(time.monotonic())  # alive from the start (service.control.claims reads it)
            self._run()
        except BaseException as exc:
            self.error = exc
            log.exception("[%s] executor stopped by a fatal error: %s", self.component, exc)
            self._report_fatal(exc)
            raise
        finally:
            try:
                self.io.close()
            except Exception as exc:
                log.warning("[%s] closing state stores: %s", self.component, exc)

    def _run(self) -> None:
        raise NotImplementedError

    def first_task(self) -> int:
        """The global id of this executor's first task (an acker record's sender, :func:`~streams.wire.acker.from_header`); -1 for an acker."""
        cdef = self.topology.components.get(self.component)
        return cdef.task_base + min(self.tasks) if cdef is not None and self.tasks else -1

    def _task_count(self) -> int:
        """How many tasks the component has (the acker, not a declared component, has ``topology.acker.executors``)."""
        cdef = self.topology.components.get(self.component)
        return cdef.num_tasks if cdef is not None else self.conf.ackers

    def _assigned(self) -> None:
        """Call once the tasks are open (and state restored): writes this life's epoch markers, then the executor is ready."""
        self._mark_epoch()
        self.assigned.set()

    def _mark_epoch(self, timeout_s: float = 10.0, attempts: int = 3) -> None:
        """Before this life writes anything: an epoch marker on every partition it may write, confirmed (:mod:`streams.runtime.fencing`).

        Every partition of every bolt subscribed to one of the component's streams gets
        :func:`~streams.wire.codec.encode_marker` of this executor's tasks; every acker
        partition an empty record from this executor (its ``squall.from`` header names the
        sender and epoch). A zombie's late record then lands after the marker in any
        partition it reaches. Raises FatalError naming the component and the first
        partition not confirmed after ``attempts`` flushes of ``timeout_s`` seconds.
        """
        cdef = self.topology.components.get(self.component)
        if cdef is None or not self.tasks:
            return  # the acker writes no tuples
        marker = encode_marker(self.component, [cdef.task_base + t for t in self.tasks], self.epoch)
        targets: dict[str, int] = {}
        for stream in cdef.streams:
            for target, _ in self.topology.subscribers(self.component, stream):
                targets[component_topic(self.topology.name, target.id)] = target.num_tasks
        sends: list[tuple[str, int, bytes, Any]] = [(topic, p, marker, None) for topic, n in targets.items() for p in range(n)]
        if self.acks is not None:
            sends += [(self.acks.topic, p, b"[]", self.acks.headers) for p in range(self.conf.ackers)]
        pending = set(range(len(sends)))
        confirmed: list[int] = []
        for _ in range(attempts):
            confirmed.clear()
            for i in sorted(pending):
                topic, p, value, headers = sends[i]
                self.producer.produce(topic, value, partition=p, headers=headers, on_delivery=lambda err, _m, i=i: None if err else confirmed.append(i))
            self.producer.flush(timeout_s)
            pending -= set(confirmed)
            if not pending:
                log.info("[%s] epoch %d marked on %d partitions (tasks %s)", self.component, self.epoch, len(sends), list(self.tasks))
                return
        topic, p, _, _ = sends[min(pending)]
        raise FatalError(f"[{self.component}] could not write its epoch marker to {topic}[{p}] ({len(pending)} partitions unconfirmed after {attempts} tries)")

    def _assign(self, consumer: Consumer, topic: str) -> list[TopicPartition]:
        """Start reading this executor's tasks: partitions :attr:`tasks` of ``topic``, each from the group's committed offset (else the earliest).

        The committed offsets are asked first and given to ``assign()``
        (:func:`~streams.kafka.clients.committed_offsets`). Returns the partitions.
        """
        partitions = [TopicPartition(topic, p) for p in self.tasks]
        committed = self._start_offsets(consumer, partitions)
        self.start_offsets = {p: committed.get(p, OFFSET_BEGINNING) for p in self.tasks}
        consumer.assign([TopicPartition(topic, p, off) for p, off in self.start_offsets.items()])
        return partitions

    def hook_cleanup(self, task_id: int) -> None:
        """Call the ``cleanup`` of task ``task_id``'s hooks (it stopped cleanly: Storm's ``ITaskHook.cleanup``)."""
        for ctx in self._contexts:
            if ctx.this_task_id == task_id:
                ctx.cleanup_hooks()

    def _start_offsets(self, consumer: Consumer, partitions: list[TopicPartition]) -> dict[int, int]:
        """Where each task starts reading: the group's committed offsets (a bolt also refuses a replaced owner's late commit)."""
        return committed_offsets(consumer, partitions, self.component)

    def _task_copy(self, partition: int, kind: type[C]) -> tuple[int, TopologyContext, C]:
        """A fresh copy of the component for the task at input ``partition``: its global task id, its context and the copy.

        Raises FatalError if the copy is not a ``kind``.
        """
        cdef = self.topology.components[self.component]
        task_id = cdef.task_base + partition
        ctx = TopologyContext(self.topology, self.component, task_id, self.worker, self.local, self.io, self.conf)
        ctx.add_auto_hooks()  # topology.auto.task.hooks: before open/prepare, as Storm's Task adds them
        self._contexts.append(ctx)
        obj = cdef.new_instance()
        if not isinstance(obj, kind):
            raise FatalError(f"[{self.component}] is not a {kind.__name__}: {type(obj).__name__}")
        return task_id, ctx, obj

    def request_trace(self, rate: float) -> None:
        """Turn sampled tracing on at ``rate`` (0..1) or off (0), live (Storm UI's debug action; any thread).

        The executor's loop applies it at its next round (:meth:`_apply_trace`): the tracer
        and every collector's reference change on the executor's own thread, so a tuple is
        never half traced.
        """
        self.trace_request = (rate,)

    def _apply_trace(self, rate: float) -> None:
        self.trace_request = None
        if rate <= 0:
            if self.tracer is not None:
                self.tracer.flush()
                self.tracer = None
        elif self.tracer is None:
            self.tracer = Tracer(self.component, self.worker, rate, self._publish_trace)
        else:
            self.tracer.limit = threshold(rate)
        for collector in self._collectors():
            collector.tracer = self.tracer

    def _collectors(self) -> list[Any]:
        """The collectors that read :attr:`tracer` (a bolt's or spout's tasks'; none here)."""
        return []

    def _publish_trace(self, key: bytes, value: bytes) -> None:
        self._produce_diagnostic(trace_topic(self.topology.name), value, key)

    def _publish_error(self, key: bytes, value: bytes) -> None:
        self._produce_diagnostic(errors_topic(self.topology.name), value, key)

    def _produce_diagnostic(self, topic: str, value: bytes, key: bytes, on_delivery: Callable[[Any, Any], None] | None = None) -> None:
        """Produce an error report, trace record or stats snapshot with its own delivery callback (default :meth:`_diagnostic_delivered`).

        A diagnostic record that is not delivered is counted (``diagnostics_lost``) and logged,
        but never counts as a lost output: the producer's own callback would make the next
        flush fail the trees it was about to ack (:class:`streams.kafka.clients.DeliveryTracker`).
        """
        while True:
            try:
                self.producer.produce(topic, value, key, on_delivery=on_delivery or self._diagnostic_delivered)
                return
            except BufferError:
                self.producer.poll(0.05)

    def _diagnostic_delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.stats.inc("diagnostics_lost")
            log.warning("[%s] a diagnostic record to %s was not delivered: %s", self.component, msg.topic(), err)

    def _report_fatal(self, exc: BaseException) -> None:
        """Publish the error that stops this executor (``squall errors``), best effort: the worker is exiting."""
        if not isinstance(exc, Exception):
            return  # KeyboardInterrupt, SystemExit: a stop, not an error
        try:
            self.errors.throttle.in_window = 0  # the last word of an executor is never throttled
            self.errors.report("fatal", -1, exc=exc)
            self.producer.flush(5)
        except Exception as report_exc:
            log.warning("[%s] could not publish the fatal error: %s", self.component, report_exc)

    def poison(self, msg: Message, exc: Exception, task: int = -1) -> None:
        """An input record that does not decode: count it, report it (cause ``poison``) and dead-letter it."""
        self.stats.inc("poison")
        where = f"{msg.topic()}[{msg.partition()}]@{msg.offset()}"
        self.errors.report("poison", task, exc=exc, where=where)
        self.dead_letter(msg, str(exc), 0, {"task": str(task)} if task >= 0 else None)

    def _maybe_stats(self, now: float, final: bool = False) -> None:
        """Publish a stats snapshot to ``squall.T.__metrics`` every ``squall.stats.interval.secs``.

        Called once per round of the executor's loop: it is also the executor's heartbeat
        (:attr:`beat`, read by the worker's hang check, :mod:`service.process.hang`), and where the
        loop stops while the worker's lease is not held (:meth:`_await_lease`).
        """
        self.beat = now
        if self.lease is not None and not self.lease.held and not final:
            self._await_lease()
        if self.trace_request is not None:
            self._apply_trace(self.trace_request[0])
        if self.tracer is not None:
            if final:
                self.tracer.flush()
            else:
                self.tracer.maybe_flush(now)
        if final or now >= self._next_stats:
            self._next_stats = now + self.conf.stats_interval_secs
            self._update_gauges()
            self.stats.counters["purged_records"] = self.purger.purged_records
            self.stats.counters["produced_bytes"] = self.produced.total
            if self.tracer is not None:
                self.stats.counters["trace_events"] = self.tracer.events
            self._read_metrics()
            self._process_gauges()
            self._publish_snapshot(final)

    def leased(self) -> bool:
        """Whether the worker holds its lease (always, without one): commits and blocking flushes ask first."""
        return self.lease is None or self.lease.held

    def _publish_snapshot(self, final: bool = False) -> None:
        """Produce one stats snapshot; its confirmation renews the worker's lease (with the snapshot's own ``time``).

        A snapshot that is not delivered counts as a lost diagnostic, not a lost output.
        """
        if self.lease is not None:
            self.stats.gauges["lease_held"] = 1.0 if self.lease.held else 0.0  # a held executor processes nothing (service.control.claims.ClaimBook.contested)
        snap = self.stats.snapshot(final)
        lease, taken = self.lease, float(snap["time"])

        def confirmed(err: Any, msg: Any) -> None:
            if err is None:
                if lease is not None:
                    lease.renew(taken)
            else:
                self._diagnostic_delivered(err, msg)

        value, key = encode_json(snap), self.stats.instance.encode()
        self.produced.total += len(value) + len(key)
        self._produce_diagnostic(metrics_topic(self.topology.name), value, key, confirmed)

    def _await_lease(self) -> None:
        """Hold this executor's loop while the worker's lease is not held (:mod:`streams.runtime.lease`).

        Nothing is consumed, emitted, acked or committed meanwhile; the executor only beats and
        publishes a snapshot every :data:`~streams.runtime.lease.PAUSED_SNAPSHOT_S`, whose
        confirmation tells the worker the broker is back. The worker's main thread ends the wait
        (lease regained) or the process (fenced, or stopped while paused).
        """
        lease = self.lease
        assert lease is not None
        self.stats.inc("lease_pauses")
        log.warning("[%s] %s: paused: the worker's lease on its tasks is not held (%s)", self.component, self.worker, lease.state)
        began = time.monotonic()
        next_snapshot = 0.0
        while not lease.held:
            now = time.monotonic()
            self.beat = now
            if now >= next_snapshot:
                next_snapshot = now + PAUSED_SNAPSHOT_S
                self._publish_snapshot()
            self.producer.poll(0.05)
        self.stats.inc("lease_paused_seconds", time.monotonic() - began)
        log.warning("[%s] %s: resumed after %.1f s without a lease", self.component, self.worker, time.monotonic() - began)

    def _read_metrics(self) -> None:
        """Counters the tasks registered (``TopologyContext.register_metric``), summed per name."""
        totals: dict[str, float] = {}
        for ctx in self._contexts:
            for name, read in ctx.metrics.items():
                totals[name] = totals.get(name, 0.0) + read()
        self.stats.counters.update(totals)
        self.stats.registered.update(totals)

    def _process_gauges(self) -> None:
        """The worker process's CPU seconds and resident memory (bytes), in every executor's snapshot (exported once per worker)."""
        cpu, rss = process_usage()
        self.stats.gauges["process_cpu_seconds"] = cpu
        self.stats.gauges["process_rss_bytes"] = rss
        if PROCESS_GC.installed:
            self.stats.gauges["process_gc_seconds"] = PROCESS_GC.total_seconds

    def _update_gauges(self) -> None:
        """Refresh gauges before a snapshot."""
