"""Run a topology in one process, with no broker, on simulated time (Storm's ``Testing.completeTopology``).

What is the runtime's own code here: the components (copied per task as the executors copy
them, with the same ``open``/``prepare`` and config), the collectors
(:mod:`streams.runtime.collectors`) with their anchoring and ack algebra, the routing and
every grouping (:mod:`streams.runtime.routing`), the acker's ledger
(:class:`acker.durable.DurableLedger`), the spout's tracking, pending bound, timeouts and
outcomes (:class:`streams.runtime.spout_tasks.SpoutTasks`), the bolt's decode and guarded
execute (:func:`streams.runtime.bolt_task.record_tuples`, :func:`~streams.runtime.bolt_task.execute_guarded`),
the wire codecs, windows, stateful bolts and their state stores.

Where it differs, because there is no Kafka:

* Topics are an in-memory log (:class:`streams.testing.memlog.MemoryLog`): nothing is lost
  or reordered by the transport, and records are never purged.
* The executors' loops are replaced by one deterministic scheduler (:meth:`LocalTopology.run`):
  each round, spouts emit, every bolt task executes what waits on its partition, the ackers
  apply their ops, and spouts apply their results. A task's outputs and then its acker ops
  are flushed after its turn, as an executor flushes outputs before acks.
* Time is :class:`streams.testing.clock.SimulatedTime`; it passes only in :meth:`LocalTopology.advance`,
  in steps of ``step_s``, firing ticks, timeouts, replay backoff and window timers.
* Offsets are committed every ``squall.bolt.commit.period.secs`` / ``topology.spout.commit.period``
  simulated seconds; a crashed task (:meth:`streams.testing.Faults.crash`) reads again from there.
* Ids come from a seeded generator (``seed``), and the shuffle groupings from a seeded
  ``random``, so a run is repeatable.
* A transactional spout's coordinator state and batches come from memory
  (:mod:`streams.testing.batches`). Components that need a real Kafka (a SparkBolt, the
  exactly-once KafkaSink: ``Component.needs_real_kafka``) are refused with a KitError; a
  KafkaBolt writes to the in-memory log (:class:`~streams.testing.memlog.MemoryProducer`).

One class, :class:`LocalTopology`, holds the whole run: the scheduler and the public API,
building each task as an executor does (and rebuilding it after an injected crash), its
dead-letter hooks, and what is recorded (each task's emits and ack faults go through a
:class:`~streams.testing.observe.KitHook`); :func:`run_topology` is its one-call form.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import random
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from streams.config import TopologyConfig, resolve
from streams.exceptions import DecodeError
from streams.kafka.source import KafkaMessageId, ResumableSource, SourceIO, kafka_source, task_of
from streams.kafka.spout import KafkaSpout
from streams.model.bolt import Bolt
from streams.model.context import LocalTasks, TopologyContext
from streams.model.io import DeadLetterWriter, ExecutorIO
from streams.model.spec import ComponentDef, Topology
from streams.model.spout import Spout
from streams.model.stateful import StatefulBoltExecutor
from streams.model.tuple import Tuple, tick_tuple
from streams.model.windowed import WindowedBoltExecutor
from streams.monitoring.errors import ErrorLog, ErrorReport, ErrorThrottle
from streams.monitoring.spout_ledger import TaskLedger
from streams.monitoring.stats import ExecutorStats
from streams.runtime.acks import AckBuffer
from streams.runtime.bolt_task import execute_guarded, record_tuples
from streams.runtime.collectors import BoltOutputCollectorImpl, SpoutOutputCollectorImpl
from streams.runtime.inflight import InFlightTrees
from streams.runtime.routing import Router
from streams.runtime.spout_tasks import SpoutTask, SpoutTasks, make_bound
from streams.state import OpenedStores
from streams.state.keyvalue import is_internal
from streams.state.semantics import STATE_KINDS
from streams.testing.ackers import LocalAckers
from streams.testing.batches import MemoryBatchSource
from streams.testing.clock import SimulatedTime, to_ns
from streams.testing.exceptions import KitError, NotSettledError
from streams.testing.faults import Faults, Raiser, injected_error
from streams.testing.memlog import MemoryLog, MemoryProducer, Record
from streams.testing.observe import KitHook, members
from streams.testing.result import DeadLetter, Emitted, RunResult, TaskError
from streams.testing.tasks import BoltRun, Input, Outbox, SpoutRun, TaskRun, encode_input
from streams.transactional.spout import TransactionalKafkaSpout
from streams.wire.acker import decode_results
from streams.wire.commits import MAX_FINISHED_RANGES
from streams.wire.dead_letter import read_dead_letter_headers
from streams.wire.ids import seed_ids, source_key
from streams.wire.naming import ACKER_COMPONENT, ack_result_topic, acker_topic, component_topic, dead_letter_topic, errors_topic

log = logging.getLogger("squall.testing")

KIT_LAYER: dict[str, Any] = {"squall.state.url": "memory://", "squall.broker.embedded": True}
"""Config under the topology's own: state in memory unless the topology names a store, and
no exactly-once Kafka sink (it needs a real broker's transactions)."""


class LocalTopology:
    """A topology running in this process on simulated time; see the module docstring for what is real.

    Args:
      topology: a built topology (``TopologyBuilder.create_topology``).
      config: config on top of the topology's and each component's own (Storm keys), e.g.
        ``{"topology.message.timeout.secs": 5}``.
      time: the simulated clock (a fresh one by default).
      faults: faults to inject (:class:`~streams.testing.faults.Faults`).
      seed: seeds root and edge ids and the shuffle groupings.
      step_s: simulated seconds per step of :meth:`advance`.

    Raises:
      KitError: a component that needs a real Kafka (a SparkBolt, a KafkaSink), or a fault
        naming an unknown component.
      ConfigError, TopologyError: as at submit, naming the component.

    Use it as a context manager, or call :meth:`close`.

    >>> from streams import TopologyBuilder, KafkaSpout, RecordTranslator, BasicBolt
    >>> class Upper(BasicBolt):
    ...     def declare_output_fields(self, declarer): declarer.declare(["line"])
    ...     def execute(self, t, collector): collector.emit([t[0].upper()])
    >>> b = TopologyBuilder()
    >>> _ = b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")))
    >>> _ = b.set_bolt("upper", Upper()).shuffle_grouping("lines")
    >>> with LocalTopology(b.create_topology("doc")) as local:
    ...     local.feed("lines", ["a cat", "a dog"])
    ...     local.settle()
    ...     local.result().values("upper")
    [('A CAT',), ('A DOG',)]
    """

    def __init__(
        self,
        topology: Topology,
        *,
        config: Mapping[str, Any] | None = None,
        time: SimulatedTime | None = None,
        faults: Faults | None = None,
        seed: int = 0,
        step_s: float = 0.1,
    ) -> None:
        for cdef in topology.components.values():
            why = cdef.obj.needs_real_kafka
            if why is not None:
                raise KitError(f"[{cdef.id}] does not run in the test kit: {why}; run it with `squall run` on Apache Kafka")
        unknown = sorted((faults.components() if faults else set()) - set(topology.components))
        if unknown:
            raise KitError(f"[{unknown[0]}] a fault names a component the topology {topology.name!r} does not have (it has {sorted(topology.components)})")
        self.topology = topology
        self.name = topology.name
        self.time = time or SimulatedTime()
        self.faults = copy.deepcopy(faults) if faults is not None else Faults()
        """This run's copy of the rules (a rule's matches are used up by the run)."""
        self.step_s = step_s
        self.seed = seed
        self.log = MemoryLog(lambda: self.time.wall() * 1000)
        self.result_ = RunResult()
        self.confs = {cid: self._conf(cdef, config) for cid, cdef in topology.components.items()}
        self.top_conf = resolve(KIT_LAYER, topology.conf, config, where=topology.name)
        self.local = LocalTasks()
        self.io: dict[str, ExecutorIO] = {}
        self.stores = OpenedStores()
        """The run's state stores, shared by every component (one per URL, as the same database is in a real run)."""
        self.roots: dict[int, Any] = {}
        """Root id -> the spout message id of its tree (to name the trees a bolt's emit belongs to)."""
        self.cores: dict[str, SpoutTasks] = {}
        self.spouts: list[SpoutRun] = []
        self.bolts: list[BoltRun] = []
        self.delayed: list[tuple[float, BoltRun, Callable[[], None]]] = []
        self.dropped: dict[int, Tuple] = {}
        """Tuples whose ack a fault drops (by ``id``; the tuple is kept alive here)."""
        self.delays: dict[int, tuple[Tuple, float]] = {}
        """Tuples whose ack a fault delays, with the delay (simulated seconds)."""
        self.ackers = LocalAckers(self.name, self.top_conf, self.log, self.time.wall, DeadLetterWriter(self.name, ACKER_COMPONENT, self.log.produce))
        self.read_pos: dict[str, int] = {}
        """External topics' records already taken into the result (outputs, dead letters)."""
        self.next_commit: dict[str, float] = {}
        self.coordinators: dict[str, dict[str, Any]] = {}
        """A transactional spout's saved coordinator state (:mod:`streams.testing.batches`), by spout."""
        self.error_logs: dict[str, ErrorLog] = {}
        """Each component's error log (:meth:`_errors`), filled as tasks are built."""
        self.latencies: dict[tuple[str, str], list[float]] = {}
        """What components recorded with ``TopologyContext.register_latency``, by ``(component,
        name)``: seconds as the component measured them (its own clock, not the simulated one)."""
        self.closed = False
        self._in_run = False
        self._random_state = random.getstate()
        random.seed(seed)
        seed_ids(seed)
        try:
            self._open()
        finally:
            self._random_state, state = random.getstate(), self._random_state
            random.setstate(state)

    # -- input -------------------------------------------------------------------------------
    def feed(self, spout: str, records: Iterable[Input], topic: str | None = None) -> None:
        """Append ``records`` to the source topic of Kafka-reading spout ``spout`` (default: the first it reads).

        A KafkaSpout, or a transactional or opaque one (its batches are cut from what is fed).
        Round-robin over its partitions, as ``squall run --input`` does; a ``(key, value)``
        goes by its key.

        Raises KitError naming the spout if it is unknown or does not read Kafka.
        """
        run = next((r for r in self.spouts if r.component == spout), None)
        if run is None:
            raise KitError(f"[{spout}] is not a spout of {self.name!r} (spouts: {sorted(self.cores)})")
        assert run.task is not None
        obj = run.task.spout
        n = self._source_partitions(spout)
        if isinstance(obj, TransactionalKafkaSpout):
            topic = topic or (obj.topics or [component_topic(self.name, spout)])[0]
        elif run.task.source is not None:
            topics = run.task.source.source_topics(self.name, spout, list(self.log.topics))
            if not topics and topic is None:
                raise KitError(f"[{spout}] reads no topic the kit can feed (a pattern matches only topics that exist: name one with topic=)")
            topic = topic or topics[0]
            num_tasks = self.topology.components[spout].num_tasks
            for p in range(n):
                owner = next(r for r in self.spouts if r.component == spout and r.index == task_of(topic, p, num_tasks))
                if (topic, p) not in owner.partitions:
                    owner.partitions.append((topic, p))
                    owner.fed[(topic, p)] = 0
        else:
            raise KitError(f"[{spout}] reads no Kafka topic ({type(obj).__name__}): it makes its own tuples, so it takes no input")
        fed = self.result_.inputs[spout]
        start = sum(self.log.end(topic, p) for p in range(n))
        for i, rec in enumerate(records, start):
            key, value = rec if isinstance(rec, tuple) else (None, rec)
            k = encode_input(key)
            p = zlib.crc32(k) % n if k is not None else i % n
            fed.append(KafkaMessageId(topic, p, self.log.end(topic, p)))
            self.log.produce(topic, encode_input(value), key=k, partition=p)

    # -- running -----------------------------------------------------------------------------
    def run(self, max_rounds: int = 1_000_000) -> int:
        """Run rounds until nothing moves, with no time passing; returns the rounds that did something.

        Raises KitError if the topology is still busy after ``max_rounds`` (a loop of tuples).
        """
        self._check_open()
        with self._seeded():
            rounds = 0
            while self._round():
                rounds += 1
                if rounds >= max_rounds:
                    raise KitError(f"[{self.name}] still busy after {max_rounds} rounds: does a bolt emit forever?")
            self._collect()
            return rounds

    @contextlib.contextmanager
    def _seeded(self) -> Iterator[None]:
        """The run's own ``random`` sequence while its code runs (shuffle groupings); the caller's is put back after."""
        if self._in_run:
            yield
            return
        state = random.getstate()
        random.setstate(self._random_state)
        self._in_run = True
        try:
            yield
        finally:
            self._in_run = False
            self._random_state = random.getstate()
            random.setstate(state)

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` of simulated time pass, in steps of ``step_s``.

        The topology runs after each step: ticks fire, trees time out, replays come due,
        windows slide.
        """
        if seconds < 0:
            raise ValueError(f"[{self.name}] simulated time cannot go back ({seconds} s)")
        end = self.time.ns + to_ns(seconds)
        step = max(1, to_ns(self.step_s))
        with self._seeded():
            self.run()
            while self.time.ns < end:
                self.time.ns += min(step, end - self.time.ns)
                self._timers()
                self.run()

    def settled(self) -> bool:
        """Every input was emitted, every tree settled, and nothing waits on a topic or in a task."""
        for run in self.spouts:
            task = run.task
            if task is not None and task.source is not None and (task.source.buffered or any(run.fed[tp] < self.log.end(*tp) for tp in run.partitions)):
                return False
        return not any(len(c.inflight) for c in self.cores.values()) and not self.delayed and not self._waiting()

    def settle(self, max_s: float | None = None) -> None:
        """Run, advancing time, until :meth:`settled`.

        ``max_s``: simulated seconds to allow (default: 20 message timeouts, room for
        every replay of the default retry policy). Raises NotSettledError naming the spouts with
        trees still in flight.
        """
        limit = self.time.now + (max_s if max_s is not None else 20 * self.top_conf.message_timeout_secs)
        self.run()
        while not self.settled():
            if self.time.now >= limit:
                stuck = {c: len(core.inflight) for c, core in self.cores.items() if len(core.inflight)}
                raise NotSettledError(
                    f"[{self.name}] not settled after {self.time.now:g} simulated s: trees in flight {stuck or 'none'}, delayed acks {len(self.delayed)}"
                )
            self.advance(self.step_s)

    def close(self) -> None:
        """Stop every task as the executors do; idempotent.

        Bolts' ``cleanup`` (what it emits is flushed), spouts' ``close``, and the state stores
        closed.
        """
        if self.closed:
            return
        with self._seeded():
            self._stop_tasks()
        self._collect()
        self._read_state()
        self.closed = True
        self.result_.simulated_s = self.time.now
        for io in self.io.values():
            io.close()
        self.stores.close()

    def _stop_tasks(self) -> None:
        for b in self.bolts:
            if b.bolt is not None:
                try:
                    b.bolt.cleanup()
                except Exception:
                    log.exception("[%s] task %d cleanup failed", b.component, b.task_id)
                self._flush(b)
        for s in self.spouts:
            self._flush(s)
            if s.task is not None:
                s.task.spout.close()

    def result(self) -> RunResult:
        """What the run observed so far (:class:`~streams.testing.result.RunResult`).

        ``set_state_output`` entries hold what the state's last checkpoint or commit saved,
        as ``squall run`` reads it: after :meth:`settle`, every acked tree's updates.
        """
        self._collect()
        if not self.closed:
            self._read_state()
        self.result_.simulated_s = self.time.now
        return self.result_

    def __enter__(self) -> LocalTopology:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self.closed:
            raise KitError(f"[{self.name}] the local topology is closed")

    # -- one round ---------------------------------------------------------------------------
    def _round(self) -> bool:
        moved = False
        for run in self.spouts:
            moved |= self._spout_turn(run)
        for b in self.bolts:
            moved |= self._bolt_turn(b)
        moved |= self.ackers.turn()
        for run in self.spouts:
            moved |= self._results_turn(run)
        return moved

    def _spout_turn(self, run: SpoutRun) -> bool:
        task = run.task
        assert task is not None
        fed = False
        if task.source is not None:  # the feed: hand records over while the source's buffer has room
            for tp in run.partitions:
                if task.source.buffered >= run.conf.batch_size:
                    break
                log_ = self.log.partition(*tp)
                take = log_[run.fed[tp] : run.fed[tp] + run.conf.batch_size]
                if take:
                    task.source.on_records(list(take))
                    run.fed[tp] += len(take)
                    fed = True
        core = self.cores[run.component]
        before = task.collector.emitted
        crash = self.faults.crash_rule(run.component, run.index)
        emitted = core.emit(lambda: self._commit_spout(run), only=run.task_id)
        run.life_count += task.collector.emitted - before
        if crash is not None and run.life_count >= crash.after:
            self._crash_spout(run, crash)
            return True
        self._flush(run)
        return fed or emitted > 0

    def _bolt_turn(self, b: BoltRun) -> bool:
        records = self.log.partition(b.topic, b.index)
        if b.pos >= len(records):
            return False
        crash = self.faults.crash_rule(b.component, b.index)
        for rec in records[b.pos : b.pos + b.conf.batch_size]:
            self._execute_record(b, rec)
            b.pos = rec.offset() + 1
            if crash is not None and b.life_count >= crash.after:
                self._crash_bolt(b, crash)
                return True
        self._flush(b)
        return True

    def _execute_record(self, b: BoltRun, rec: Record) -> None:
        try:
            tuples = record_tuples(self.topology, b.component, b.topic, rec.value(), rec.partition(), rec.offset())
        except DecodeError as exc:
            self._errors(b.component).report("poison", b.task_id, exc=exc, where=f"{b.topic}[{rec.partition()}]@{rec.offset()}")
            self._io(b.component).dead_letter_sink(b.component).dead_letter(rec, str(exc), 0)
            return
        for t in tuples:
            b.life_count += 1
            self._execute(b, t)

    def _execute(self, b: BoltRun, t: Tuple) -> None:
        assert b.bolt is not None and b.collector is not None
        rule = self.faults.tuple_rule(b.component, t)
        target: Any = b.bolt
        if rule is not None:
            if rule.kind == "fail":
                b.collector.fail(t)
                return
            if rule.kind == "raise":
                target = Raiser(injected_error(rule, b.component, t))
            elif rule.kind == "drop_ack":
                self.dropped[id(t)] = t
            else:
                self.delays[id(t)] = (t, rule.seconds)
        exc = execute_guarded(target, b.collector, t)
        if exc is not None:
            self._errors(b.component).report("exception", b.task_id, exc=exc, where=t.where, roots=t.anchors)
            self.result_.errors.append(TaskError(b.component, b.task_id, type(exc).__name__, str(exc), tuple(t.values)))
            log.info("[%s] task %d failed on %s: %s", b.component, b.task_id, t.where, exc)

    def _flush(self, run: TaskRun) -> None:
        """Outputs first, then acker ops (as an executor flushes)."""
        for topic, value, key, partition, headers in run.outbox.records:
            self.log.produce(topic, value, key, partition, headers)
        run.outbox.records.clear()
        if run.acks is not None and len(run.acks):
            run.acks.flush(self.log.produce)
        if isinstance(run, BoltRun):
            run.flushed = run.pos

    def _results_turn(self, run: SpoutRun) -> bool:
        topic = ack_result_topic(self.name)
        records = self.log.partition(topic, run.task_id)
        if run.result_pos >= len(records):
            return False
        core = self.cores[run.component]
        for rec in records[run.result_pos :]:
            core.settle(decode_results(rec.value(), component=run.component, topic=topic, partition=run.task_id, offset=rec.offset()))
        run.result_pos = len(records)
        return True

    def _waiting(self) -> bool:
        """Records not yet read by their reader."""
        if any(b.pos < self.log.end(b.topic, b.index) for b in self.bolts):
            return True
        if self.ackers.waiting():
            return True
        return any(r.result_pos < self.log.end(ack_result_topic(self.name), r.task_id) for r in self.spouts)

    # -- time --------------------------------------------------------------------------------
    def _timers(self) -> None:
        now = self.time.now
        due = [d for d in self.delayed if d[0] <= now]
        if due:
            self.delayed = [d for d in self.delayed if d[0] > now]
            for _, b, release in due:
                if b.collector is not None and b.bolt is not None:  # a crash lost the acks it held
                    release()
                    self._flush(b)
        for b in self.bolts:
            if b.outbox.records or (b.acks is not None and len(b.acks)):  # what a hook released or a bolt acked late: the executor's timed flush
                self._flush(b)
            if now >= b.next_tick - 1e-9:
                freq = b.conf.tick_tuple_freq_secs or float("inf")
                b.next_tick = now + freq
                self._execute(b, tick_tuple())
                self._flush(b)
        self.ackers.expire()
        for cid, core in self.cores.items():
            core.timeouts(self.confs[cid].message_timeout_secs)
            core.bound.adjust(core.inflight.oldest_age())
        for cid, due_at in list(self.next_commit.items()):
            if now >= due_at:
                conf = self.confs[cid]
                self.next_commit[cid] = now + (conf.commit_period_secs if self.topology.components[cid].is_spout else conf.bolt_commit_period_secs)
                self._commit(cid)

    def _commit(self, component: str) -> None:
        for s in self.spouts:
            if s.component == component:
                self._commit_spout(s)
        for b in self.bolts:
            if b.component == component:
                b.committed = b.flushed

    def _commit_spout(self, run: SpoutRun) -> None:
        if run.task is not None and run.task.source is not None:
            source = run.task.source
            run.committed.update(source.committable())
            if isinstance(source, ResumableSource):  # as the spout executor does: its ledger keeps them
                run.task.ledger.keep_finished(source.finished_above(MAX_FINISHED_RANGES))

    # -- building ----------------------------------------------------------------------------
    def _conf(self, cdef: ComponentDef, config: Mapping[str, Any] | None) -> TopologyConfig:
        conf = resolve(KIT_LAYER, self.topology.conf, cdef.conf, config, where=cdef.id)
        cdef.obj.validate_conf(cdef.id, conf)
        return conf

    def _io(self, component: str) -> ExecutorIO:
        """``component``'s capabilities, as its executor gives them.

        Dead letters on the in-memory log, the run's state stores (one per URL for the whole
        run, so ``memory://`` is shared as a real store is), producers and batch sources on the log.
        """
        io = self.io.get(component)
        if io is None:
            io = self.io[component] = ExecutorIO(
                dead_letters=DeadLetterWriter(self.name, component, self.log.produce),
                stores=self.stores,
                producers=self,
                batches=self,
                source_positions=self._source_positions,
                latency=self._latency_recorder(component),
            )
        return io

    def _latency_recorder(self, component: str) -> Callable[[str], Callable[[float], None]]:
        def recorder(name: str) -> Callable[[float], None]:
            return self.latencies.setdefault((component, name), []).append

        return recorder

    def new_producer(self, config: dict[str, Any]) -> MemoryProducer:
        """A producer a component opens itself (a KafkaBolt's): it writes to the in-memory log (:class:`~streams.model.io.Producers`)."""
        return MemoryProducer(self.log)

    def batch_source(self, component: str, topics: list[str]) -> MemoryBatchSource:
        """Transactional spout ``component``'s coordinator state and source records, in memory (:class:`~streams.model.io.BatchSources`)."""
        return MemoryBatchSource(self.log, topics, self._source_partitions(component), self.coordinators.setdefault(component, {}))

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
            if isinstance(task.source, ResumableSource) and task.source.first_poll_offset == "committed":
                for tp, start in run.fed.items():  # and does not replay what an earlier one finished above them
                    ranges = ledger.resumable(tp, start)
                    if ranges:
                        task.source.resume_finished(tp, ranges)
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
    def _spout_dead_letter(self, run: SpoutRun) -> Any:
        letters = self._io(run.component).dead_letter_sink(run.component)
        trees = self.result_.trees[run.component]

        def dead_letter(msg: Any, reason: str, attempts: int, details: dict[str, str] | None = None) -> None:
            letters.dead_letter(msg, reason, attempts, {**(details or {}), "task": str(run.task_id)})
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
                backend = self.stores.backends.get(url)
                if backend is not None:
                    self.result_.outputs[f"{self.name}.{so.state}"] = {
                        str(k): v for k, v in STATE_KINDS[so.kind](backend, f"{self.name}.{so.state}").items().items()
                    }
                continue
            url = self.confs[so.state].state_url or "memory://"
            store = self.stores.kv.get(url)
            if store is None:
                continue
            merged = {str(json.loads(k)): json.loads(v) for _, k, v in store.kv_items(f"{self.name}.{so.state}") if not is_internal(k)}
            self.result_.outputs[f"{self.name}.{so.state}"] = merged

    # -- what the run observed ------------------------------------------------------------
    def _emitted(self, e: Emitted) -> None:
        self.result_.emitted.setdefault((e.component, e.stream), []).append(e)

    def _observer(self, run: SpoutRun | BoltRun) -> KitHook:
        """The task hook through which the kit watches ``run``'s task: its emits, and its acks to drop or delay."""
        return KitHook(self, run)

    def _outcome(self, spout: str) -> Any:
        trees = self.result_.trees[spout]

        def on_outcome(task_id: int, msg_id: Any, outcome: str) -> None:
            for mid in members(msg_id):
                trees.setdefault(mid, []).append(outcome)

        return on_outcome

    def _collect(self) -> None:
        """Take new output, dead-letter and error records into the result."""
        errors = errors_topic(self.name)
        for rec in self._new(errors):
            self.result_.reports.append(ErrorReport.decode(rec.value(), topic=errors, partition=rec.partition(), offset=rec.offset()))
        dlq = dead_letter_topic(self.name)
        for rec in self._new(dlq):
            h = read_dead_letter_headers(rec.headers())
            self.result_.dead_letters.append(
                DeadLetter(
                    h.get("component", "?"),
                    h.get("topic", "?"),
                    int(h.get("partition", -1)),
                    int(h.get("offset", -1)),
                    int(h.get("attempts", 0)),
                    h.get("error", ""),
                    rec.value(),
                )
            )
        for cdef in self.topology.components.values():
            sink = cdef.obj.sink_topic(self.name)
            if sink is not None:
                self.result_.sinks.setdefault(sink, []).extend(self._new(sink))
        for out in self.topology.outputs:
            topic = out.topic_for(self.name)
            merged = self.result_.outputs.setdefault(topic, {})
            records = self.result_.output_records.setdefault(topic, [])
            for rec in self._new(topic):
                obj = json.loads(rec.value() or b"{}")
                records.append(obj)
                out.fold(merged, obj)

    def _new(self, topic: str) -> list[Record]:
        records = self.log.records(topic)
        start = self.read_pos.get(topic, 0)
        self.read_pos[topic] = len(records)
        return records[start:]


def run_topology(
    topology: Topology,
    inputs: Mapping[str, Iterable[Input]] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    time: SimulatedTime | None = None,
    faults: Faults | None = None,
    seed: int = 0,
    max_s: float | None = None,
) -> RunResult:
    """Run ``topology`` in this process on ``inputs`` until every tree settled; return what it did.

    ``inputs``: ``spout id -> records`` for KafkaSpouts (see :data:`Input`). The run feeds
    them, runs until every input is emitted and every tree is acked, failed for good, or
    dead-lettered (advancing simulated time as needed, at most ``max_s`` simulated seconds),
    then stops the tasks (``cleanup``) and returns a :class:`~streams.testing.result.RunResult`.

    Raises KitError (bad inputs or faults, a component that needs a real Kafka), NotSettledError.

    >>> from examples.wordcount import topology
    >>> result = run_topology(topology(), {"lines": ["the cat", "The dog"]})
    >>> result.output() == {"the": 2, "cat": 1, "dog": 1}
    True
    >>> result.final_outcomes("lines")
    Counter({'acked': 2})
    """
    with LocalTopology(topology, config=config, time=time, faults=faults, seed=seed) as local:
        for spout, records in (inputs or {}).items():
            local.feed(spout, records)
        local.settle(max_s)
    return local.result()
