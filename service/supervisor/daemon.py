"""``squall serve``: Storm's supervisor (and, together with the others, its Nimbus).

One per machine; each serves any number of topologies until SIGTERM. Every round
(:meth:`SupervisorService.tick`, about 5 per second):

1. heartbeat in ``squall.__supervisors`` (the slots it owns, :mod:`service.control.slots`);
2. read new control records (:mod:`service.control.log`) and plan each changed topology
   (:mod:`service.control.plan`; its topics are created if missing), and read the events of every
   supervisor (``started``/``stopped``/``crashed``: who claims which tasks,
   :mod:`service.control.claims`);
3. reap workers that exited: a crash is reported to ``squall.__events`` and restarted
   with backoff, or given up on after repeated crashes (:mod:`service.process.restarts`);
4. start and stop workers to match the desired state (:mod:`service.supervisor.reconcile`); a worker
   starts only once no other process still claims its tasks and its slot has settled;
5. SIGKILL workers that ignored a stop for longer than the drain bound.

On SIGTERM it stops its workers (each drains: :mod:`service.worker.drain`) and keeps heartbeating
while they do; then it stops heartbeating without leaving the group (see
:class:`service.control.slots.SlotMembership`), so its slots move one session timeout later, once
the work is committed.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from service.brokers.admin import ensure_topology_topics
from service.brokers.embedded import EMBEDDED_EVENT_KEY, EMBEDDED_LAYER, EMBEDDED_WARNING, EmbeddedBroker
from service.config import ServiceSettings
from service.control.boards import TopologyBoards, holds_lease
from service.control.claims import Claim, ClaimBook, task_refs
from service.control.client import Client
from service.control.events import SUPERVISOR_BEAT_S, SUPERVISORS_KEY, EventRecorder
from service.control.log import SLOTS, ControlLog, ControlTopics, ControlWriter, EventLog, ensure_control_topics
from service.control.plan import TopologyPlan, code_record, materialize
from service.control.record import TopologyRecord, update_failed
from service.control.rolling import SETTLE_S, worker_code
from service.control.slots import SlotMembership, slot_of, vouched_slots
from service.deps.store import ArtifactStore
from service.process.hang import heartbeat_mtime, heartbeat_path, heartbeat_stale
from service.process.restarts import CrashHistory, RestartPolicy
from service.process.spawn import last_error, log_tail, spawn_worker
from service.query.live import LiveStatus
from service.query.logs import log_file
from service.supervisor.contact import PROBE_TIMEOUT_S, BrokerContact
from service.supervisor.http import HealthServer
from service.supervisor.installs import BundleInstalls
from service.supervisor.metrics import SupervisorMetrics
from service.supervisor.reconcile import Running, WorkerKey, WorkerSpec, decide, desired_workers
from service.supervisor.state_placement import local_state_components, refusal
from service.supervisor.storm_api_data import squall_version, storm_api
from service.supervisor.verbs_api import VerbsApi
from service.ui.app import UiApp
from service.ui.security import Gate
from service.worker.claim_watch import FENCED_EXIT_CODE
from service.worker.metrics import ProcessStats, StatsCollector, merge_snapshots
from streams.config import resolve
from streams.exceptions import SquallError

log = logging.getLogger("squall.serve")

TICK_S = 0.2

CLAIM_GRACE_S = 15.0
"""A worker just started holds its tasks this long before its executors' stats must show
it alive (seconds; covers interpreter start-up, an acker's restore, a Spark session)."""

LIVE_REFRESH_S = 2.0
"""How often the REST API's tails are polled between requests (seconds; :class:`~service.query.live.LiveStatus`)."""


@dataclass
class WorkerProc:
    """A worker this supervisor started."""

    spec: WorkerSpec
    proc: subprocess.Popen[bytes]
    log_path: Path
    ready_path: Path
    started_at: float
    stopping: bool = False
    kill_at: float = 0.0
    started_wall: float = 0.0
    """When it was started (seconds since the epoch: its heartbeat file's clock)."""
    heartbeat: Path | None = None
    """Its heartbeat file (:mod:`service.process.hang`)."""


class SupervisorService:
    """One supervisor (see the module docstring).

    Args:
      settings: the service settings (data dir, HTTP address, drain bound, Kafka overrides).
      bootstrap: ``bootstrap.servers``.
      registry: where its metrics go (``squall_supervisor_*``, ``squall_worker_restarts_total``).
      restart_policy: crash backoff.
      clock: wall-clock seconds (kill deadlines are wall times).
    Thread safety: :meth:`stop` from any thread (a signal handler); the rest from one.
    """

    def __init__(
        self,
        settings: ServiceSettings,
        bootstrap: str,
        registry: CollectorRegistry | None = None,
        restart_policy: RestartPolicy | None = None,
        clock: Callable[[], float] = time.time,
        embedded: EmbeddedBroker | None = None,
    ) -> None:
        self.settings = settings
        self.bootstrap = bootstrap
        self.id = settings.supervisor_id or f"{socket.gethostname()}-{os.getpid()}"
        self.clock = clock
        self.home = settings.data_dir / "supervisors" / self.id
        self.home.mkdir(parents=True, exist_ok=True)
        self.kafka = settings.kafka_overrides()
        self.service_conf = settings.topology_layer()
        self.embedded = embedded
        """The embedded broker this supervisor started (``--embedded-broker``), else None."""
        self._next_broker_report = 0.0
        self._next_beat = 0.0
        self.started_at = clock()
        if embedded is not None:
            self.service_conf.update(EMBEDDED_LAYER)
        self.names = ControlTopics(settings.control_namespace)
        self.policy = restart_policy or settings.restart_policy()
        self.registry = registry or CollectorRegistry()
        self.stop_event = threading.Event()
        self.control: ControlLog | None = None
        self.events: EventLog | None = None
        self.claims = ClaimBook(startup_grace_s=CLAIM_GRACE_S)
        self.waiting: dict[WorkerKey, str] = {}
        """Workers held back this round, and why (logged when the reason changes)."""
        self.writer: ControlWriter | None = None
        self.recorder = EventRecorder(self.id, lambda: self.writer)
        self.membership: SlotMembership | None = None
        self.contact: BrokerContact | None = None
        """The broker's answers to this supervisor, and the lease /readyz follows (:mod:`service.supervisor.contact`)."""
        self._contact_held = True
        self._silent_since = 0.0
        """Monotonic seconds of the broker's last answer before the current lapse."""
        self.plans: dict[str, TopologyPlan] = {}
        self.roll_plans: dict[str, TopologyPlan] = {}
        """Per topology being updated: the plan of the code its workers roll away from (:mod:`service.control.rolling`)."""
        self.plan_errors: dict[str, str] = {}
        self.installs = BundleInstalls(
            ArtifactStore(bootstrap, self.names.namespace, self.kafka.get("consumer")), self.home / "envs", self._event, self.id, clock
        )
        """Topologies' dependency bundles installed here (:mod:`service.supervisor.installs`)."""
        self.local_state: dict[tuple[str, int], dict[str, str]] = {}
        """Per (topology, version): its components whose state is a local file (:func:`service.supervisor.state_placement.local_state_components`)."""
        self.refusals: set[tuple[WorkerKey, int]] = set()
        """Workers (and the record version) refused for their state's place, already reported."""
        self.procs: dict[WorkerKey, WorkerProc] = {}
        self.crashes: dict[WorkerKey, CrashHistory] = {}
        self.backoff_until: dict[WorkerKey, float] = {}
        self.gave_up: set[WorkerKey] = set()
        self.desired: dict[WorkerKey, WorkerSpec] = {}
        self.metrics = SupervisorMetrics(self.registry)
        self.metrics.slots.labels(self.id).set_function(self.slots_held)  # at each scrape: a round may wait on the broker during a cut
        self.contested: dict[tuple[str, tuple[str, int]], list[Claim]] = {}
        """Tasks with two live claimants at the last round (logged when they appear)."""
        self.boards = TopologyBoards(bootstrap)
        self.registry.register(StatsCollector(self.executor_stats))
        self.registry.register(ProcessStats(self.id))
        api_client = Client(bootstrap, self.service_conf, self.kafka, self.names, self.home / "envs")
        self.live = LiveStatus(api_client, clock)
        """What the REST API answers from: tails kept open, refreshed every :data:`LIVE_REFRESH_S` by :meth:`_refresh_live`."""
        self.live_thread = threading.Thread(target=self._refresh_live, name=f"live-{self.id}", daemon=True)
        self.ui = UiApp(self.live, api_client, Gate(settings.ui_token, clock), squall_version(), clock)
        """The UI's pages and actions (:mod:`service.ui.app`), beside the REST API."""
        self.http = HealthServer(
            settings.http_host,
            settings.http_port,
            self.registry,
            self.ready,
            storm_api(api_client, clock, self.live).handle,
            self.home / "logs",
            self.ui.handle,
            VerbsApi(self.live, bootstrap, settings.control_namespace),
        )

    # -- lifecycle -------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the serving loop to stop (thread-safe): it drains the workers, then returns."""
        self.stop_event.set()

    def run(self) -> None:
        """Serve until :meth:`stop`; then drain the workers and leave the group."""
        ensure_control_topics(self.bootstrap, self.names)
        self.control = ControlLog(self.bootstrap, self.names, self.kafka.get("consumer"))
        self.events = EventLog(self.bootstrap, self.names, self.kafka.get("consumer"))
        self.writer = ControlWriter(self.bootstrap, self.names, self.kafka.get("producer"))
        session_ms = resolve(self.service_conf, where=f"supervisor {self.id}").session_timeout_ms
        producer, events_topic = self.writer.producer, self.names.events
        contact = self.contact = BrokerContact(
            lambda: producer.list_topics(topic=events_topic, timeout=PROBE_TIMEOUT_S), time.monotonic(), long_gap_s=session_ms / 1000.0
        )
        self.metrics.silence.labels(self.id).set_function(lambda: contact.silent_for(time.monotonic()))
        contact.start()
        self.membership = SlotMembership(self.bootstrap, self.id, self.names, session_ms, self.kafka.get("consumer"))
        self.http.start()
        self.live_thread.start()
        if self.embedded is not None:
            log.warning("[supervisor %s] %s", self.id, EMBEDDED_WARNING)
        log.info("[supervisor %s] serving on %s:%d (bootstrap %s)", self.id, self.http.host, self.http.port, self.bootstrap)
        try:
            while not self.stop_event.wait(TICK_S):
                self.tick()
        finally:
            self._shutdown()

    def _refresh_live(self) -> None:
        """Keep the REST API's tails current until the supervisor stops (a broker that does not answer is logged, then tried again)."""
        while True:
            try:
                self.live.refresh()
            except SquallError as exc:
                log.warning("[supervisor %s] live status: %s", self.id, exc)
            if self.stop_event.wait(LIVE_REFRESH_S):
                return

    def _shutdown(self) -> None:
        log.info("[supervisor %s] stopping %d workers (drain up to %.0f s)", self.id, len(self.procs), self.settings.shutdown_timeout_secs)
        for w in self.procs.values():
            self._terminate(w)
        deadline = time.monotonic() + self.settings.shutdown_timeout_secs + 10
        while self.procs and time.monotonic() < deadline:
            self._heartbeat()  # keep the slots until the workers have committed
            for key in [k for k, w in self.procs.items() if w.proc.poll() is not None]:
                self._stopped(key, self.procs.pop(key))
            time.sleep(TICK_S)
        for key, w in self.procs.items():
            w.proc.kill()
            w.proc.wait()
            self._stopped(key, w)
        self.procs.clear()
        self.installs.shutdown()
        if self.contact is not None:
            self.contact.stop()
        self.recorder.last_tries(10, TICK_S)  # the exits not confirmed yet, before this process is gone
        self._announce(self.clock(), "stopped")
        # No LeaveGroup (see SlotMembership): the slots move after one session timeout.
        if self.control is not None:
            self.control.close()
        if self.events is not None:
            self.events.close()
        self.boards.close()
        if self.live_thread.is_alive():
            self.live_thread.join(LIVE_REFRESH_S + 30)
        self.live.close()
        self.http.close()
        log.info("[supervisor %s] stopped", self.id)

    def _report_broker(self, now: float) -> None:
        """Every 30 s: the embedded broker's memory on /metrics and in the events topic (``squall status`` shows it)."""
        if self.embedded is None or now < self._next_broker_report:
            return
        self._next_broker_report = now + 30.0
        rss = self.embedded.resident_bytes()
        self.metrics.broker.labels(self.id).set(rss)
        if self.writer is not None:
            try:
                self.writer.event(EMBEDDED_EVENT_KEY, {"event": "embedded_broker", "supervisor": self.id, "rss_bytes": rss, "at": now})
            except SquallError as exc:
                log.warning("[supervisor %s] could not report the embedded broker's memory: %s", self.id, exc)

    def _heartbeat(self) -> None:
        if self.membership is not None:
            self.membership.poll()

    def _announce(self, now: float, state: str = "up") -> None:
        """Every :data:`SUPERVISOR_BEAT_S`, and once when it stops: this supervisor's host, HTTP address, uptime, slots and workers (the UI's cluster page)."""
        if self.writer is None or (state == "up" and now < self._next_beat):
            return
        self._next_beat = now + SUPERVISOR_BEAT_S
        beat = {
            "event": "supervisor",
            "state": state,
            "supervisor": self.id,
            "host": socket.gethostname(),
            "http": f"{self.http.host}:{self.http.port}",
            "started_at": self.started_at,
            "slots": self.slots_held(),
            "workers": len(self.procs),
            "version": squall_version(),
            "at": now,
        }
        try:
            self.writer.event(SUPERVISORS_KEY, beat)
        except SquallError as exc:
            log.warning("[supervisor %s] could not write its heartbeat: %s", self.id, exc)

    # -- one round -------------------------------------------------------------------
    def owned(self) -> set[int]:
        """The slots this supervisor owns now."""
        return self.membership.owned if self.membership is not None else set()

    def slots_held(self) -> int:
        """The slots this supervisor can vouch for owning (:func:`service.control.slots.vouched_slots`), from the contact itself: any thread, at each scrape."""
        m, contact = self.membership, self.contact
        if m is None:
            return 0
        if contact is None:
            return vouched_slots(m.table, True, None)
        return vouched_slots(m.table, contact.holds(time.monotonic()), contact.long_gap_ended)

    def joined(self) -> bool:
        """Whether this supervisor has been assigned slots at least once."""
        return self.membership is not None and self.membership.joined

    def tick(self) -> None:
        """One round (see the module docstring)."""
        assert self.control is not None and self.events is not None
        self._heartbeat()
        self._check_contact()
        self.recorder.retry()
        for name in self.control.poll(0) | self.installs.done(self.control.records.values()):
            self._plan(name)
        for event in self.events.poll(0):
            self.claims.apply(event)
        now = self.clock()
        if self.control.caught_up() and self.joined():
            records = list(self.control.records.values())
            codes = {n: {p.code: p.workers} for n, p in self.plans.items()}
            for n, p in self.roll_plans.items():
                codes.setdefault(n, {})[p.code] = p.workers
            self.desired = desired_workers(records, codes, self.owned(), now, lambda rec, i: self._code_of(rec, i, now))
        self._reap(now)
        running = {k: Running(w.spec.executors, w.stopping, w.spec.code) for k, w in self.procs.items()}
        decision = decide(self.desired, running, self.backoff_until, self.gave_up, now)
        for key in decision.stop:
            self._terminate(self.procs[key])
        self.boards.poll(self.plans)
        for spec in decision.start:
            why = self._held_back(spec, now)
            if why is None:
                self.waiting.pop(spec.key, None)
                self._start(spec, now)
            elif self.waiting.get(spec.key) != why:
                self.waiting[spec.key] = why
                log.info("[%s] worker w%d waits: %s", spec.key.topology, spec.key.worker, why)
        self._kill_hung()
        self._watch_contested()
        for w in self.procs.values():
            if w.stopping and now >= w.kill_at and w.proc.poll() is None:
                log.warning("[%s] worker w%d ignored SIGTERM for %.0f s: SIGKILL", w.spec.key.topology, w.spec.key.worker, self.settings.shutdown_timeout_secs)
                w.proc.kill()
        self.metrics.workers.labels(self.id).set(len(self.procs))
        self._report_broker(now)
        self._announce(now)
        self.metrics.topologies.labels(self.id).set(len(self.control.records))

    def _plan(self, name: str) -> None:
        """Plan ``name``'s record (and, while an update rolls, the code it rolls away from); a failure is kept for ``status``."""
        assert self.control is not None
        rec = self.control.records.get(name)
        if rec is None:
            self.plans.pop(name, None)
            self.roll_plans.pop(name, None)
            self.plan_errors.pop(name, None)
            self._sweep_envs()
            return
        if name in self.plans and self.plans[name].version == rec.version:
            return
        roll = rec.update
        old = None
        if roll is not None and not roll.drain_all:
            code = self.control.versions.get(name, {}).get(roll.from_code)
            if code is None:
                self.plan_errors[name] = f"[{name}] cannot plan version {rec.version}: code version {roll.from_code} is not on the control topic"
                log.error("%s", self.plan_errors[name])
                return
            old = self._materialize(code_record(rec, code))
            if old is None:
                return
        plan = self._materialize(rec)
        if plan is None:
            return
        self.plans[name] = plan
        if old is not None:
            self.roll_plans[name] = old
        else:
            self.roll_plans.pop(name, None)
        self.plan_errors.pop(name, None)
        self.gave_up = {k for k in self.gave_up if k.topology != name}  # a new version gets new tries
        self.metrics.plans.labels(self.id).inc()
        log.info("[%s] planned version %d (code version %d): %d workers %s", name, rec.version, rec.code_version, len(plan.workers), plan.workers)
        self._sweep_envs()

    def _sweep_envs(self) -> None:
        self.installs.sweep(p.env for p in [*self.plans.values(), *self.roll_plans.values()])

    def _materialize(self, rec: TopologyRecord) -> TopologyPlan | None:
        """``rec``'s plan, its topics created; None while its bundle installs, or after a failure (kept in :attr:`plan_errors`)."""
        name = rec.name
        env = None
        if rec.artifact is not None:
            env = self.installs.env(rec)
            if env is None:
                if name in self.installs.errors:
                    self.plan_errors[name] = self.installs.errors[name]
                return None
        try:
            plan = materialize(
                rec,
                self.home,
                self.bootstrap,
                service_conf={**self.settings.state_layer(name), **self.service_conf},
                kafka=self.kafka,
                log_level=self.settings.log_level,
                shutdown_timeout_s=self.settings.shutdown_timeout_secs,
                control_namespace=self.names.namespace,
                metrics_host=self.settings.http_host,
                env=env,
            )
            ensure_topology_topics(self.bootstrap, plan.topology, plan.conf)
        except Exception as exc:  # user code may raise anything: report it, serve the rest
            self.plan_errors[name] = f"[{name}] cannot plan version {rec.version} (code version {rec.code_version}): {type(exc).__name__}: {exc}"
            log.error("%s", self.plan_errors[name])
            return None
        return plan

    def _plan_of(self, spec: WorkerSpec) -> TopologyPlan:
        """The plan ``spec``'s code version runs (the record's, or the one an update rolls away from)."""
        old = self.roll_plans.get(spec.key.topology)
        return old if old is not None and old.code == spec.code else self.plans[spec.key.topology]

    def _code_of(self, rec: TopologyRecord, worker: int, now: float) -> int:
        """The code version worker ``worker`` of ``rec`` should run now (:func:`service.control.rolling.worker_code`)."""
        roll = rec.update
        if roll is None:
            return rec.code_version
        w = self.procs.get(WorkerKey(rec.name, worker))
        running = w.spec.code if w is not None and not w.stopping else None
        return worker_code(roll, rec.code_version, worker, running, lambda j: self._on_new(rec.name, j, roll.to_code, now))

    def _on_new(self, name: str, worker: int, code: int, now: float) -> bool:
        """Whether worker ``worker`` of ``name`` runs code version ``code``, with live stats and its lease, for :data:`SETTLE_S` (on any supervisor).

        A worker the new code no longer has (its components were removed) is done once it is gone.
        """
        plan = self.plans.get(name)
        if plan is not None and worker >= len(plan.workers):
            return not self.claims.of_worker(name, worker)
        return any(c.code == code and now - c.started_at >= SETTLE_S and self._processing(c) for c in self.claims.of_worker(name, worker))

    def _start(self, spec: WorkerSpec, now: float) -> None:
        plan = self._plan_of(spec)
        (self.home / "logs").mkdir(exist_ok=True)
        log_path = log_file(self.home / "logs", spec.key.topology, spec.key.worker)
        ready, heartbeat = plan.path.parent / f"worker-{spec.key.worker}.ready", heartbeat_path(plan.path.parent, spec.key.worker)
        for stale in (ready, heartbeat):
            stale.unlink(missing_ok=True)
        claim = uuid.uuid4().hex[:16]
        epoch = self.claims.next_epoch(spec.key.topology, task_refs(spec.executors), int(time.time() * 1000))
        env = plan.env
        proc = spawn_worker(plan.path, spec.key.worker, log_path, claim=claim, epoch=epoch, python=env.python if env else "", paths=env.paths if env else ())
        self.installs.started(spec.key, env)
        self.procs[spec.key] = WorkerProc(spec, proc, log_path, ready, now, started_wall=time.time(), heartbeat=heartbeat)
        self.metrics.restarts.labels(self.id, spec.key.topology, str(spec.key.worker))  # 0 from the start: rates and alerts see it
        tasks = sorted([c, t] for c, t in task_refs(spec.executors))
        recorded = self._event(
            spec.key.topology,
            {
                "event": "started",
                "supervisor": self.id,
                "worker": spec.key.worker,
                "pid": proc.pid,
                "version": spec.version,
                "code": spec.code,
                "tasks": tasks,
                "claim": claim,
                "epoch": epoch,
                "at": now,
                "http": f"{self.http.host}:{self.http.port}",
            },
            keep=False,
        )
        if not recorded:  # a worker whose claim is not in the events could run beside another: it must not run
            log.error("[%s] worker w%d (pid %d): its claim could not be recorded; stopping it", spec.key.topology, spec.key.worker, proc.pid)
            self.procs[spec.key].stopping = True
            proc.kill()
            return
        log.info("[%s] started worker w%d (pid %d, code version %d): %s", spec.key.topology, spec.key.worker, proc.pid, spec.code, spec.components)

    def _held_back(self, spec: WorkerSpec, now: float) -> str | None:
        """Why ``spec`` may not start yet, or None.

        Its slot has not settled, the events are not read to their end, or another process
        still claims some of its tasks.
        """
        assert self.membership is not None and self.events is not None
        if slot_of(spec.key.topology, spec.key.worker) not in self.membership.startable():
            return "its slot was just gained (or a rebalance is under way)"
        refused = self._refused(spec, now)
        if refused is not None:
            return refused
        if not self.events.caught_up():
            return "reading the events of the other supervisors"
        rec = self.control.records.get(spec.key.topology) if self.control is not None else None
        if rec is not None and rec.update is not None and rec.update.drain_all:
            old = self.claims.other_code(spec.key.topology, spec.code, now, self._alive)
            if old:
                who = ", ".join(f"w{c.worker} (pid {c.pid}, code version {c.code}) on {c.supervisor}" for c in old)
                return f"a drain-all update waits for the other version's workers to stop: {who}"
        blocking = self.claims.blocking(spec.key.topology, task_refs(spec.executors), now, self._alive)
        if blocking:
            who = ", ".join(f"w{c.worker} (pid {c.pid}) on {c.supervisor}" for c in blocking)
            return f"its tasks are still held by {who}"
        return None

    def _refused(self, spec: WorkerSpec, now: float) -> str | None:
        """Why ``spec`` may never start on this supervisor (:mod:`service.supervisor.state_placement`), or None.

        Said once per record version and worker: logged as an error and written to the events
        topic as ``refused`` (``squall status`` lists it among the errors).
        """
        plan = self._plan_of(spec)
        local = self.local_state.get((plan.name, plan.version))
        if local is None:
            local = self.local_state[(plan.name, plan.version)] = local_state_components(plan.topology, plan.conf)
        why = refusal(spec.key.topology, spec.key.worker, spec.components, local, alone=len(self.owned()) >= SLOTS)
        if why is not None and (spec.key, spec.version) not in self.refusals:
            self.refusals.add((spec.key, spec.version))
            log.error("%s", why)
            event = {"event": "refused", "supervisor": self.id, "worker": spec.key.worker, "components": ",".join(dict.fromkeys(spec.components))}
            self._event(spec.key.topology, {**event, "version": spec.version, "reason": why, "at": now})
        return why

    def _alive(self, claim: Claim) -> bool:
        """Whether the claim's worker publishes live stats (fresh, not final)."""
        return bool(self.boards.live_of(claim))

    def _processing(self, claim: Claim) -> bool:
        """Whether the claim's worker publishes live stats and holds its lease."""
        return holds_lease(self.boards.live_of(claim))

    def _watch_contested(self) -> None:
        """Export (and log once) the tasks that two live processes claim (:meth:`service.control.claims.ClaimBook.contested`)."""
        contested = self.claims.contested(self._processing)
        for (topology, (component, task)), claims in contested.items():
            if (topology, (component, task)) not in self.contested:
                who = " and ".join(f"w{c.worker} (pid {c.pid}) on {c.supervisor}" for c in claims)
                log.error("[%s] task %s:%d is claimed by two live processes: %s", topology, component, task, who)
        self.contested = contested
        for topology in self.plans:
            self.metrics.contested.labels(self.id, topology).set(sum(1 for t, _ in contested if t == topology))

    def _terminate(self, w: WorkerProc) -> None:
        if w.stopping or w.proc.poll() is not None:
            return
        w.stopping = True
        w.kill_at = self.clock() + self.settings.shutdown_timeout_secs + 5
        w.proc.send_signal(signal.SIGTERM)
        log.info("[%s] stopping worker w%d (pid %d)", w.spec.key.topology, w.spec.key.worker, w.proc.pid)

    def _kill_hung(self) -> None:
        """SIGKILL each worker whose heartbeat file stopped (:mod:`service.process.hang`): the next round reaps it as a crash and restarts it."""
        wall = time.time()
        for w in self.procs.values():
            plan = self.plans.get(w.spec.key.topology)
            if w.stopping or w.heartbeat is None or plan is None or w.proc.poll() is not None:
                continue
            timeout = plan.conf.worker_hang_timeout_secs
            if heartbeat_stale(heartbeat_mtime(w.heartbeat), w.started_wall, wall, timeout):
                log.error(
                    "[%s] worker w%d (pid %d): no heartbeat for %.0f s: the process is hung; killing it",
                    w.spec.key.topology,
                    w.spec.key.worker,
                    w.proc.pid,
                    timeout,
                )
                self.metrics.hung.labels(self.id, w.spec.key.topology).inc()
                w.proc.kill()

    def _reap(self, now: float) -> None:
        for key, w in list(self.procs.items()):
            code = w.proc.poll()
            if code is None:
                continue
            del self.procs[key]
            self.installs.exited(key)
            if w.stopping:
                self._stopped(key, w)
                continue
            if code == FENCED_EXIT_CODE:
                self._fenced(key, w, now)
                continue
            self._crashed(key, w, code, now)
            self._failed_update(key, w, now)

    def _stopped(self, key: WorkerKey, w: WorkerProc) -> None:
        event = {"event": "stopped", "supervisor": self.id, "worker": key.worker, "pid": w.proc.pid, "exit_code": w.proc.returncode, "at": self.clock()}
        self._event(key.topology, event)

    def _fenced(self, key: WorkerKey, w: WorkerProc, now: float) -> None:
        """It exited because another process claimed its tasks (:mod:`service.worker.claim_watch`): ``fenced``, not a crash."""
        tail = log_tail(w.log_path, 2000)
        self.metrics.fenced.labels(self.id, key.topology).inc()
        log.error("[%s] worker w%d (pid %d) was fenced: another process claimed its tasks. Last lines:\n%s", key.topology, key.worker, w.proc.pid, tail)
        event = {"event": "fenced", "supervisor": self.id, "worker": key.worker, "pid": w.proc.pid, "exit_code": FENCED_EXIT_CODE, "at": now}
        self._event(key.topology, {**event, "components": ",".join(dict.fromkeys(w.spec.components)), "log_tail": tail})

    def _crashed(self, key: WorkerKey, w: WorkerProc, code: int, now: float) -> None:
        history = self.crashes.setdefault(key, CrashHistory(self.policy))
        delay = history.crashed(now)
        tail = log_tail(w.log_path, 2000)
        comps = ",".join(dict.fromkeys(w.spec.components))
        event = {
            "event": "crashed",
            "supervisor": self.id,
            "worker": key.worker,
            "pid": w.proc.pid,
            "components": comps,
            "exit_code": code,
            "at": now,
            "log_tail": tail,
            "gave_up": delay is None,
        }
        if delay is None:
            self.gave_up.add(key)
            log.error("[%s] worker w%d (%s) crashed %d times: giving up. Last lines:\n%s", key.topology, key.worker, comps, history.total, tail)
        else:
            self.backoff_until[key] = now + delay
            self.metrics.restarts.labels(self.id, key.topology, str(key.worker)).inc()
            log.warning("[%s] worker w%d (%s) exited with %s: restarting in %.1f s", key.topology, key.worker, comps, code, delay)
        self._event(key.topology, event)

    def _failed_update(self, key: WorkerKey, w: WorkerProc, now: float) -> None:
        """A worker of an update's new code crashed before it was ready: the update fails and rolls back (:func:`~service.control.record.update_failed`).

        Steps: 1. only a crash at start-up of the code an update rolls to counts (not a rollback's);
        2. the record goes back to the old code, with the reason (the crash's last log line);
        3. it is written (the other supervisors then roll back too); a write that fails is logged
        and tried again at the worker's next crash.
        """
        assert self.control is not None
        rec = self.control.records.get(key.topology)
        # 1. A new worker that never became ready, during an update that is not itself a rollback.
        roll = rec.update if rec is not None else None
        if rec is None or roll is None or roll.rollback_of is not None or w.spec.code != roll.to_code or w.ready_path.exists():
            return
        old = self.control.versions.get(key.topology, {}).get(roll.from_code)
        if old is None:
            return
        # 2. Back to the old code.
        reason = f"worker w{key.worker} of version {roll.to_code} exited with {w.proc.returncode} at start-up: {last_error(log_tail(w.log_path, 4000))}"
        back = update_failed(rec, old, reason, now)
        # 3. Written for every supervisor.
        try:
            if self.writer is not None:
                self.writer.put(back)
                self.control.records[key.topology] = back
                log.error("[%s] update to code version %d failed (%s): rolling back to version %d", key.topology, roll.to_code, reason, old.code)
        except SquallError as exc:
            log.error("[%s] update to code version %d failed, and the rollback could not be written: %s", key.topology, roll.to_code, exc)

    def _event(self, topology: str, event: dict[str, Any], keep: bool = True) -> bool:
        """Record a worker start or exit in the events topic (claims, ``status``, ``kill``); it applies to this supervisor's own claims at once.

        Returns whether the broker confirmed it; an unconfirmed one is written again each round (:mod:`service.control.events`).
        """
        self.claims.apply({"topology": topology, **event})
        return self.recorder.record(topology, event, keep)

    # -- metrics ---------------------------------------------------------------------
    def executor_stats(self) -> list[Any]:
        """The live executors of the workers this supervisor runs, from their topologies' stats topics (so one scrape of a supervisor covers its workers)."""
        return merge_snapshots(self.boards.live_of_workers({(k.topology, f"w{k.worker}") for k in self.procs}))

    # -- readiness -------------------------------------------------------------------
    def _check_contact(self) -> None:
        """Each round: the broker's silence on /metrics, and a log line when the contact lease lapses or comes back."""
        if self.contact is None:
            return
        now = time.monotonic()
        silent = self.contact.silent_for(now)
        held = self.contact.holds(now)
        if held != self._contact_held:
            self._contact_held = held
            if held:
                log.info("[supervisor %s] the broker answers again after %.1f s", self.id, self.contact.last_answer - self._silent_since)
            else:
                self._silent_since = now - silent
                log.warning(
                    "[supervisor %s] cut off from the broker at %s: no answer for %.1f s; its workers' leases lapse and /readyz fails until it answers",
                    self.id,
                    self.bootstrap,
                    silent,
                )

    def ready(self) -> tuple[bool, str]:
        """``(ready, reason)`` for ``/readyz``.

        Not ready while cut off from the broker, before it joined the group and read the control
        topic, or while a worker it should run is not running or not ready.
        """
        if self.contact is not None:
            now = time.monotonic()
            if not self.contact.holds(now):
                return False, f"cut off from the broker at {self.bootstrap}: no answer for {self.contact.silent_for(now):.1f} s (its workers' leases lapsed)"
        if not self.joined():
            return False, "not in the supervisor group yet"
        if self.control is None or not self.control.caught_up():
            return False, "control topic not read to its end yet"
        for key in self.desired:
            w = self.procs.get(key)
            if w is None or w.proc.poll() is not None:
                return False, f"worker {key.topology}/w{key.worker} not running"
            if not w.ready_path.exists():
                return False, f"worker {key.topology}/w{key.worker} not ready (tasks not assigned or acker not restored)"
        return True, f"ok: {len(self.procs)} workers"
