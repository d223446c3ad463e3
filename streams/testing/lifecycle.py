"""A kit task's life: building each task as an executor does, its dead-letter hooks, and an injected crash.

A mixin of :class:`streams.testing.local.LocalTopology` (which holds the scheduler): a spout
task is opened (``open``, its source bound, a fresh life in its ledger) and a bolt task
prepared (``prepare``, reading from its committed offset) with the runtime's collectors and
router; every clock the runtime reads is this run's simulated time. A crash
(:meth:`streams.testing.Faults.crash`) drops what the task had not flushed and builds it again,
as a restarted worker does.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from streams.config import TopologyConfig, resolve
from streams.kafka.source import KafkaMessageId, SourceIO, kafka_source
from streams.kafka.spout import KafkaSpout
from streams.model.bolt import Bolt
from streams.model.context import ExecutorIO, LocalTasks, TopologyContext
from streams.model.spec import ComponentDef, Topology
from streams.model.spout import Spout
from streams.model.stateful import StatefulBoltExecutor
from streams.model.windowed import WindowedBoltExecutor
from streams.monitoring.errors import ErrorLog, ErrorThrottle
from streams.monitoring.spout_ledger import TaskLedger
from streams.monitoring.stats import ExecutorStats
from streams.runtime.acks import AckBuffer
from streams.runtime.collectors import BoltOutputCollectorImpl, SpoutOutputCollectorImpl
from streams.runtime.inflight import InFlightTrees
from streams.runtime.routing import Router
from streams.runtime.spout_tasks import SpoutTask, SpoutTasks, make_bound
from streams.state.keyvalue import is_internal
from streams.state.semantics import STATE_KINDS
from streams.testing.batches import MemoryBatchSource
from streams.testing.clock import SimulatedTime
from streams.testing.exceptions import KitError
from streams.testing.memlog import MemoryLog, MemoryProducer
from streams.testing.observe import Observer, members
from streams.testing.result import RunResult
from streams.testing.tasks import BoltRun, Outbox, SpoutRun
from streams.wire.dead_letter import dead_letter_headers
from streams.wire.ids import source_key
from streams.wire.naming import ack_result_topic, acker_topic, component_topic, dead_letter_topic, errors_topic

log = logging.getLogger("squall.testing")

KIT_LAYER: dict[str, Any] = {"squall.state.url": "memory://", "squall.broker.embedded": True}
"""Config under the topology's own: state in memory unless the topology names a store, and
no exactly-once Kafka sink (it needs a real broker's transactions)."""


class Lifecycle(Observer):
    """Builds, and after a crash rebuilds, the tasks of :attr:`topology` (see the module docstring)."""

    topology: Topology
    name: str
    time: SimulatedTime
    log: MemoryLog
    result_: RunResult
    confs: dict[str, TopologyConfig]
    local: LocalTasks
    io: dict[str, ExecutorIO]
    roots: dict[int, Any]
    cores: dict[str, SpoutTasks]
    spouts: list[SpoutRun]
    bolts: list[BoltRun]
    delayed: list[tuple[float, BoltRun, Callable[[], None]]]
    next_commit: dict[str, float]
    coordinators: dict[str, dict[str, Any]]
    error_logs: dict[str, ErrorLog]
    latencies: dict[tuple[str, str], list[float]]
    top_conf: TopologyConfig

    # -- building ----------------------------------------------------------------------------
    def _conf(self, cdef: ComponentDef, config: Mapping[str, Any] | None) -> TopologyConfig:
        conf = resolve(KIT_LAYER, self.topology.conf, cdef.conf, config, where=cdef.id)
        cdef.obj.validate_conf(cdef.id, conf)
        return conf

    def _io(self, component: str) -> ExecutorIO:
        io = self.io.get(component)
        if io is None:
            shared = next(iter(self.io.values()), None)
            raw = self._dead_letter_raw(component)

            def dead_letter(msg: Any, reason: str, attempts: int, details: dict[str, str] | None = None) -> None:
                raw(msg.value(), msg.key(), reason, topic=msg.topic(), partition=msg.partition(), offset=msg.offset(), attempts=attempts, details=details)

            io = ExecutorIO("", {}, dead_letter, dead_letter_raw=raw)
            if shared is not None:
                io.stores = shared.stores  # one store per URL for the whole run (memory:// would be empty otherwise)
                io.kv_stores = shared.kv_stores
            io.source_positions = self._source_positions
            io.new_producer = lambda cfg: MemoryProducer(self.log)
            io.latency = lambda name, c=component: self.latencies.setdefault((c, name), []).append
            io.batch_source = lambda spout, topics: MemoryBatchSource(self.log, topics, self._source_partitions(spout), self.coordinators.setdefault(spout, {}))
            self.io[component] = io
        return io

    def _open(self) -> None:
        for cdef in self.topology.components.values():
            conf = self.confs[cdef.id]
            self.next_commit[cdef.id] = self.time.now + (conf.commit_period_secs if cdef.is_spout else conf.bolt_commit_period_secs)
            if cdef.is_spout:
                self.cores[cdef.id] = SpoutTasks(
                    InFlightTrees(self.time.monotonic), make_bound(conf, self.topology, cdef.id), ExecutorStats(self.name, cdef.id, "spout", "kit")
                )
                self.result_.trees[cdef.id] = {}
                self.cores[cdef.id].on_outcome = self._outcome(cdef.id)
                self.result_.inputs[cdef.id] = []
                for index in range(cdef.num_tasks):
                    run = SpoutRun(cdef.id, index, cdef.task_base + index, conf, self._context(cdef, index, conf), Outbox(), self._acks(conf))
                    self._open_spout(run, TaskLedger(cdef.id, run.task_id))
                    self.spouts.append(run)
            else:
                for index in range(cdef.num_tasks):
                    b = BoltRun(cdef.id, index, cdef.task_base + index, conf, self._context(cdef, index, conf), Outbox(), self._acks(conf))
                    b.topic = component_topic(self.name, cdef.id)
                    self._prepare_bolt(b)
                    self.bolts.append(b)
        for cid in self.topology.components:
            ids = [r.task_id for r in [*self.spouts, *self.bolts] if r.component == cid]
            self.local.add(cid, ids)

    def _context(self, cdef: ComponentDef, index: int, conf: TopologyConfig) -> TopologyContext:
        return TopologyContext(self.topology, cdef.id, cdef.task_base + index, "kit", self.local, self._io(cdef.id), conf)

    def _acks(self, conf: TopologyConfig) -> AckBuffer | None:
        return AckBuffer(acker_topic(self.name), conf.ackers) if conf.ackers > 0 else None

    def _clocks(self, obj: Any) -> None:
        """Give every clock the runtime reads in ``obj`` this run's simulated time."""
        if isinstance(obj, StatefulBoltExecutor):
            obj.clock = self.time.monotonic
            self._clocks(obj.inner)
        if isinstance(obj, WindowedBoltExecutor):
            obj.clock = self.time.wall
        if isinstance(obj, KafkaSpout):
            obj.clock = self.time.monotonic
            obj.wall = self.time.wall

    def _open_spout(self, run: SpoutRun, ledger: TaskLedger) -> None:
        cdef = self.topology.components[run.component]
        spout = cdef.new_instance()
        if not isinstance(spout, Spout):
            raise KitError(f"[{run.component}] is not a Spout: {type(spout).__name__}")
        self._clocks(spout)
        core = self.cores[run.component]
        immediate: list[tuple[Any, int]] = []
        tracked = core.tracker(run.task_id, ledger)
        roots = self.roots

        def on_tracked(root: int, msg_id: Any, weight: int) -> None:
            roots[root] = msg_id
            tracked(root, msg_id, weight)

        self._hooks(run)
        collector = SpoutOutputCollectorImpl(
            Router(self.topology, run.component, run.ctx),
            run.task_id,
            run.outbox.produce,
            run.acks,
            on_tracked,
            core.untracked(immediate),
            hooks=run.ctx.hooks,
        )
        spout.open(run.conf.as_dict(), run.ctx, collector)
        task = SpoutTask(run.task_id, spout, collector, ledger, kafka_source(spout), immediate)
        if task.source is not None:
            task.source.bind(SourceIO(self._spout_dead_letter(run), self._poison_reporter(run.component, run.task_id)))
            run.fed = {tp: run.committed.get(tp, 0) for tp in run.partitions}  # a new life reads from the committed offsets
        run.task = task
        run.life_count = 0
        core.by_task[run.task_id] = task
        run.result_pos = self.log.end(ack_result_topic(self.name), run.task_id)  # a new life reads results from the end

    def _hooks(self, run: SpoutRun | BoltRun) -> None:
        """A new life's hooks: the kit's observer, then ``topology.auto.task.hooks`` (the copy's ``open``/``prepare`` may add more)."""
        run.ctx.hooks.clear()
        run.ctx.add_task_hook(self._observer(run))
        run.ctx.add_auto_hooks()

    def _source_partitions(self, spout: str) -> int:
        return self.topology.components[spout].input_partitions

    def _prepare_bolt(self, run: BoltRun) -> None:
        cdef = self.topology.components[run.component]
        bolt = cdef.new_instance()
        if not isinstance(bolt, Bolt):
            raise KitError(f"[{run.component}] is not a Bolt: {type(bolt).__name__}")
        self._clocks(bolt)
        self._hooks(run)
        collector = BoltOutputCollectorImpl(Router(self.topology, run.component, run.ctx), run.task_id, run.outbox.produce, run.acks, hooks=run.ctx.hooks)
        bolt.prepare(run.conf.as_dict(), run.ctx, collector)
        collector.errors = self._errors(run.component)
        run.bolt, run.collector = bolt, collector
        run.pos = run.flushed = run.committed
        run.life_count = 0
        freq = run.conf.tick_tuple_freq_secs
        run.next_tick = self.time.now + freq if freq else float("inf")

    # -- errors ------------------------------------------------------------------------------
    def _errors(self, component: str) -> ErrorLog:
        """``component``'s error log: every report is kept (no throttle), in ``squall.T.__errors`` of the in-memory log."""
        errors = self.error_logs.get(component)
        if errors is None:
            topic = errors_topic(self.name)

            def publish(key: bytes, value: bytes) -> None:
                self.log.produce(topic, value, key=key)

            unthrottled = ErrorThrottle(1.0, 2**62, self.time.monotonic)
            errors = self.error_logs[component] = ErrorLog(self.name, component, "kit", unthrottled, publish, 2**62, self.time.wall, 0)
        return errors

    def _poison_reporter(self, component: str, task: int) -> Any:
        def report(exc: Exception, where: str) -> None:
            self._errors(component).report("poison", task, exc=exc, where=where)

        return report

    # -- dead letters ---------------------------------------------------------------------------
    def _dead_letter_raw(self, component: str) -> Any:
        def dead_letter_raw(
            value: bytes | None,
            key: bytes | None,
            reason: str,
            *,
            topic: str,
            partition: int,
            offset: int,
            attempts: int,
            details: dict[str, str] | None = None,
        ) -> None:
            headers = dead_letter_headers(reason, component=component, topic=topic, partition=partition, offset=offset, attempts=attempts, details=details)
            self.log.produce(dead_letter_topic(self.name), value or b"", key=key, headers=headers)

        return dead_letter_raw

    def _spout_dead_letter(self, run: SpoutRun) -> Any:
        raw = self._dead_letter_raw(run.component)
        trees = self.result_.trees[run.component]

        def dead_letter(msg: Any, reason: str, attempts: int, details: dict[str, str] | None = None) -> None:
            details = {**(details or {}), "task": str(run.task_id)}
            raw(msg.value(), msg.key(), reason, topic=msg.topic(), partition=msg.partition(), offset=msg.offset(), attempts=attempts, details=details)
            mid = KafkaMessageId(msg.topic(), msg.partition(), msg.offset())
            trees.setdefault(mid, []).append("dead_lettered")
            if run.task is not None:
                run.task.ledger.forget(mid)

        return dead_letter

    def _source_positions(self) -> dict[int, int]:
        """The spouts' committed source offsets by source key (what a stateful bolt may forget)."""
        return {source_key(t, p): off for run in self.spouts for (t, p), off in run.committed.items()}

    # -- crashes -----------------------------------------------------------------------------
    def _crash_bolt(self, b: BoltRun, rule: Any) -> None:
        rule.left -= 1
        self.result_.crashes.append((b.component, b.index))
        log.info("[%s] task %d crashed (injected) after %d tuples; restarting from offset %d", b.component, b.task_id, b.life_count, b.committed)
        b.outbox.records.clear()
        if b.acks is not None:
            b.acks.drain()
        self.delayed = [d for d in self.delayed if d[1] is not b]
        self._prepare_bolt(b)

    def _crash_spout(self, run: SpoutRun, rule: Any) -> None:
        rule.left -= 1
        self.result_.crashes.append((run.component, run.index))
        log.info("[%s] task %d crashed (injected) after %d emits; restarting from its committed offsets", run.component, run.task_id, run.life_count)
        run.outbox.records.clear()
        if run.acks is not None:
            run.acks.drain()
        core = self.cores[run.component]
        trees = self.result_.trees[run.component]
        for tree in core.inflight.drop_task(run.task_id):  # lost with the task: its next life replays them (cause "restart")
            for mid in members(tree.msg_id):
                trees.setdefault(mid, []).append("restarted")
        assert run.task is not None
        del core.by_task[run.task_id]
        self._open_spout(run, run.task.ledger.next_life())

    # -- the state the tasks left --------------------------------------------------------------------------
    def _read_state(self) -> None:
        """``set_state_output``, as ``squall run`` writes it.

        A stateful bolt's checkpointed ``key -> value`` (every task's, merged), or what
        committers wrote to a Trident state.
        """
        for so in self.topology.state_outputs:
            if so.kind != "keyvalue":
                url = self.top_conf.state_url or "memory://"
                backend = next((io.stores[url] for io in self.io.values() if url in io.stores), None)
                if backend is not None:
                    self.result_.outputs[f"{self.name}.{so.state}"] = {
                        str(k): v for k, v in STATE_KINDS[so.kind](backend, f"{self.name}.{so.state}").items().items()
                    }
                continue
            io = self._io(so.state)
            url = self.confs[so.state].state_url or "memory://"
            store = io.kv_stores.get(url)
            if store is None:
                continue
            merged = {str(json.loads(k)): json.loads(v) for _, k, v in store.kv_items(f"{self.name}.{so.state}") if not is_internal(k)}
            self.result_.outputs[f"{self.name}.{so.state}"] = merged
