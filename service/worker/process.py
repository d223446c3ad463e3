"""A worker process: hosts executors (threads) for one topology.

Run by the supervisor as ``python -m service.worker PLAN.json INDEX``. SIGTERM stops it
cleanly (executors flush, commit and publish final stats); SIGKILL is a crash.
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from service.control.claims import task_refs
from service.control.log import ControlTopics
from service.control.scheduling import WorkerPlan, is_spark_bolt
from service.process.hang import HUNG_EXIT_CODE, heartbeat_path, stalled
from service.process.spawn import worker_epoch
from service.worker.claim_watch import FENCED_EXIT_CODE, LEASE_EXIT_CODE, ClaimWatch, me_from_env
from service.worker.drain import draining_elsewhere
from service.worker.metrics import StatsCollector, serve
from service.worker.sockets import abort_tcp_connections
from service.worker.status_watch import StatusWatcher
from service.worker.thread_names import os_named
from streams.config import TopologyConfig, resolve
from streams.kafka.clients import at_high_watermarks
from streams.model.checks import check_confs
from streams.model.context import LocalTasks
from streams.model.loader import load_topology
from streams.model.spec import Topology
from streams.monitoring.board import StatsBoard
from streams.monitoring.gc_time import PROCESS_GC
from streams.runtime.executor import Executor, ExecutorEnv
from streams.runtime.fencing import new_epoch
from streams.runtime.handoff import Handing, WorkerHandoff
from streams.runtime.lease import WorkerLease, check_timeouts
from streams.runtime.spout import SpoutExecutor
from streams.wire.naming import ACKER_COMPONENT

log = logging.getLogger("squall.worker")

EXECUTOR_KINDS: dict[str, str] = {
    "spout": "streams.runtime.spout:SpoutExecutor",
    "bolt": "streams.runtime.bolt:BoltExecutor",
    "acker": "acker.runtime_native:AckerExecutor",
    "acker-faust": "acker.runtime_faust:FaustAckerExecutor",
    "spark": "streams.spark.runtime:SparkBoltExecutor",
}
"""Each executor kind and its class (``module:Class``, imported when a worker runs one:
faust and pyspark are optional)."""


def executor_kind(topology: Topology, component: str, conf: TopologyConfig) -> str:
    """Which :data:`EXECUTOR_KINDS` entry runs ``component``."""
    if component == ACKER_COMPONENT:
        return "acker-faust" if conf.acker_runtime == "faust" else "acker"
    cdef = topology.components[component]
    if is_spark_bolt(cdef.obj):
        return "spark"
    return "spout" if cdef.is_spout else "bolt"


def executor_class(kind: str) -> Callable[[ExecutorEnv], Executor]:
    """The class of an executor kind. Raises KeyError naming an unknown kind."""
    module, _, name = EXECUTOR_KINDS[kind].partition(":")
    cls: Callable[[ExecutorEnv], Executor] = getattr(importlib.import_module(module), name)
    return cls


def build_executors(plan: WorkerPlan, index: int, lease: WorkerLease | None = None, epoch: int | None = None) -> list[Executor]:
    """The executors of worker ``index``, one :class:`ExecutorEnv` each, sharing ``lease`` (under ``squall serve``) and ``epoch``.

    ``epoch``: the worker's claim epoch (:mod:`streams.runtime.fencing`; default: now, in ms).

    Raises TopologyError or ConfigError naming the file or component.
    """
    topology = load_topology(plan.topology_file, plan.name)
    topology.conf.update(plan.topology_overrides)  # e.g. a benchmark's ackers=0
    local = LocalTasks()
    life = new_epoch() if epoch is None else epoch
    out: list[Executor] = []
    confs = check_confs(topology, plan.service_conf)
    for component, tasks in plan.executors_of(index):
        conf = confs[component] if component in confs else resolve(plan.service_conf, topology.conf, where=component)
        env = ExecutorEnv(
            topology=topology,
            component=component,
            conf=conf,
            bootstrap=plan.bootstrap,
            worker=f"w{index}",
            local=local,
            kafka=plan.kafka,
            tasks=tasks,
            topology_file=plan.topology_file,
            topology_overrides=plan.topology_overrides,
            service_conf=plan.service_conf,
            workdir=Path(plan.workdir),
            lease=lease,
            epoch=life,
        )
        if lease is not None:
            check_timeouts(conf.stats_interval_secs, component)
        out.append(executor_class(executor_kind(topology, component, conf))(env))
    return out


def drain(plan: WorkerPlan, spouts: list[SpoutExecutor], threads: list[threading.Thread], bolts: list[Handing] | None = None) -> None:
    """SIGTERM: let trees in flight finish before stopping (:mod:`service.worker.drain`).

    Under ``squall serve`` a worker also waits for spouts draining elsewhere; under ``squall
    run`` only for its own spouts. Under ``squall serve``, once nothing else is waited for,
    ``bolts`` that hold transactional batches hand them to their next lives
    (:mod:`streams.runtime.handoff`).
    """
    timeout = plan.shutdown_timeout_secs
    deadline = time.monotonic() + timeout
    for s in spouts:
        s.drain()
    if not plan.control:
        while time.monotonic() < deadline and all(t.is_alive() for t in threads) and any(len(s.inflight) or s.winding for s in spouts):
            time.sleep(0.05)
        return
    board = StatsBoard(plan.bootstrap, plan.name)
    grace = time.monotonic() + 2.5  # draining spouts elsewhere publish their flag within a stats interval
    caught_up = False  # the stats topic read to its end at least once (a slow first read must not look idle)
    handoff: WorkerHandoff | None = None
    try:
        while time.monotonic() < deadline and all(t.is_alive() for t in threads):
            board.poll(0.05 if handoff is not None else 0.2)
            caught_up = caught_up or at_high_watermarks(board.consumer, board.consumer.assignment())
            local = sum(len(s.inflight) + s.winding for s in spouts)
            if local == 0 and caught_up and time.monotonic() >= grace and not draining_elsewhere(board.latest.values(), time.time()):
                handoff = handoff or WorkerHandoff(bolts or [], time.monotonic())
                if handoff.step(time.monotonic()):
                    break
        if handoff is not None and handoff.gave_up:
            log.warning("[%s] the hand-off of batches up to txid %s did not finish in time: the batches still held replay", plan.name, handoff.cutoff)
        log.info("[%s] drained in %.1f s", plan.name, timeout - (deadline - time.monotonic()))
    finally:
        board.close()


STATEFUL_GC_FACTOR = 10
"""How much longer a stateful topology's workers wait between young collections (see :func:`gc_threshold`)."""


def gc_threshold(conf: TopologyConfig, checkpointed: bool) -> int:
    """The young-generation threshold for a worker.

    ``squall.worker.gc.threshold``, times :data:`STATEFUL_GC_FACTOR` in a topology with a
    stateful bolt unless the key was set.

    A stateful bolt holds every tuple until its next checkpoint (Storm's deferred acks: ~1 s of
    input per task), so each collection walked tens of thousands of live tuples again; the word
    count's workers spent 14 us of CPU a record on it (docs/design.md, "Garbage collection").

    >>> gc_threshold(TopologyConfig(), True), gc_threshold(TopologyConfig(), False)
    (500000, 50000)
    >>> gc_threshold(TopologyConfig.model_validate({"squall.worker.gc.threshold": 700}), True)
    700
    """
    threshold = conf.worker_gc_threshold
    if checkpointed and "worker_gc_threshold" not in conf.model_fields_set:
        threshold *= STATEFUL_GC_FACTOR
    return threshold


def tune_gc(threshold: int) -> None:
    """Set the young-generation threshold of Python's cyclic GC to ``threshold`` allocations.

    ``squall.worker.gc.threshold``; 0 leaves Python's 700. The older generations' thresholds
    are kept.

    A reliable topology keeps many objects alive on purpose: a spout task's pending records
    (up to ``squall.spout.pending.max`` of them), a bolt's tuples held until its tick. Each
    collection of an older generation walks all of them, and with 700 allocations between
    young collections that happened several times per batch (flights, acked, with 50,000:
    12-26% less worker CPU a record; docs/design.md, "Garbage collection"). Reference counting still frees
    all acyclic garbage at once; only cycles wait longer.

    >>> before = gc.get_threshold()
    >>> tune_gc(50_000); gc.get_threshold()[0]
    50000
    >>> tune_gc(0); gc.get_threshold()[0]
    50000
    >>> gc.set_threshold(*before)
    """
    if threshold > 0:
        _, older, oldest = gc.get_threshold()
        gc.set_threshold(threshold, older, oldest)


def request_trace(executors: list[Any], rate: float) -> None:
    """Ask every executor to trace at ``rate`` (0..1; 0: off) from its next round (``squall debug``)."""
    for e in executors:
        if isinstance(e, Executor):
            e.request_trace(rate)


def stack_of(thread: threading.Thread) -> str:
    """Where ``thread`` is now: its Python stack, innermost call last (``traceback.format_stack``), for a hung executor's last log line.

    A thread blocked in a C call (a librdkafka flush, a socket read) shows the Python line that
    made the call. Empty once the thread has ended.
    """
    frame = sys._current_frames().get(thread.ident) if thread.ident is not None else None
    return "".join(traceback.format_stack(frame)) if frame is not None else ""


def keep_lease(topology: str, index: int, lease: WorkerLease, now: float) -> None:
    """The main thread's part of the lease (:mod:`streams.runtime.lease`), every round: lapse it when due; exit the process once it is fenced.

    A fenced worker exits at once with :data:`~service.worker.claim_watch.FENCED_EXIT_CODE`: its
    executors are held at the top of a round, so nothing more is emitted or committed.
    """
    if lease.check(now) is not None:
        log.error(
            "[%s] worker w%d: lease lapsed: no stats snapshot confirmed for %.1f s; executors hold until it is renewed and no one else claims the tasks",
            topology,
            index,
            now - lease.renewed_at,
        )
    if lease.state == "fenced":
        log.error("[%s] worker w%d fenced: %s; exiting without committing (its connections reset)", topology, index, lease.fenced_by)
        logging.shutdown()
        abort_tcp_connections()  # what it sent during the cut must not reach the broker after it is gone
        os._exit(FENCED_EXIT_CODE)


def main(argv: list[str] | None = None) -> int:
    """The worker process: ``python -m service.worker PLAN INDEX``; returns its exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or not argv[1].isdigit():
        print("error: usage: python -m service.worker PLAN.json INDEX (squall run and squall serve start workers)", file=sys.stderr)
        return 2
    plan = WorkerPlan.read(argv[0])
    index = int(argv[1])
    logging.basicConfig(
        level=plan.log_level,
        format=f"%(asctime)s w{index} %(levelname)s %(name)s %(message)s",
    )
    lease = WorkerLease(time.time()) if plan.control else None
    executors = build_executors(plan, index, lease, worker_epoch())
    if executors:
        e = executors[0]  # a topology-level setting: every executor has it
        tune_gc(gc_threshold(e.conf, e.topology.hold().checkpointed))
        PROCESS_GC.install()  # what the collections cost: squall_worker_gc_seconds_total, and the worker's last log line
    faust = [e for e in executors if hasattr(e, "run_blocking")]
    if faust:
        log.info("[%s] worker w%d running the faust acker", plan.name, index)
        faust[0].run_blocking()
        return 0
    registry = CollectorRegistry()
    registry.register(StatsCollector(lambda: [s for e in executors for s in e.all_stats()]))
    if plan.metrics_port:
        serve(registry, plan.metrics_port + index, plan.metrics_host)
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    spouts = [e for e in executors if isinstance(e, SpoutExecutor)]
    watcher = (
        StatusWatcher(
            plan.bootstrap,
            ControlTopics(plan.control_namespace),
            plan.name,
            [s.active for s in spouts],
            plan.kafka.get("consumer"),
            on_trace=lambda rate: request_trace(executors, rate),
        )
        if plan.control
        else None
    )
    if watcher is not None:
        watcher.start()
    claim_watch = None
    if lease is not None:
        me = me_from_env(plan.name, set(task_refs(plan.executors_of(index))))
        claim_watch = ClaimWatch(plan.bootstrap, ControlTopics(plan.control_namespace), me, lease, plan.kafka.get("consumer"))
        claim_watch.start()
    threads = [threading.Thread(target=os_named(e.run, f"{e.component}-{i}"), name=f"{e.component}-{i}", daemon=True) for i, e in enumerate(executors)]
    for t in threads:
        t.start()
    log.info("[%s] worker w%d running %s", plan.name, index, [e.component for e in executors])
    ready = Path(plan.workdir) / f"worker-{index}.ready"
    heartbeat = heartbeat_path(plan.workdir, index)
    hang_timeout = executors[0].conf.worker_hang_timeout_secs if executors else 0.0
    failed = False
    while not stop.wait(0.2):
        if lease is not None:
            keep_lease(plan.name, index, lease, time.time())
        if any(not t.is_alive() for t in threads):
            failed = any(e.error is not None for e in executors)
            break
        if not ready.exists() and all(e.assigned.is_set() for e in executors):
            ready.write_text(str(os.getpid()))
        heartbeat.touch()
        named = {f"{e.component} ({t.name})": (e, t) for e, t in zip(executors, threads, strict=True)}
        hung = stalled({name: e.beat for name, (e, _) in named.items() if e.assigned.is_set()}, time.monotonic(), hang_timeout)
        if hung:
            log.error(
                "[%s] worker w%d: executor %s has not come round for %.0f s (squall.worker.hang.timeout.secs): hung; exiting to be restarted",
                ",".join(hung),
                index,
                " and ".join(hung),
                hang_timeout,
            )
            for name in hung:
                e, t = named[name]
                log.error("[%s] worker w%d: executor %s hung at:\n%s", e.component, index, name, stack_of(t))
            logging.shutdown()
            os._exit(HUNG_EXIT_CODE)  # the hung thread cannot be joined
    if lease is not None and not lease.held:
        log.error("[%s] worker w%d stopped while its lease is %s: exiting without draining or committing", plan.name, index, lease.state)
        logging.shutdown()
        abort_tcp_connections()
        os._exit(LEASE_EXIT_CODE)
    if not failed:
        drain(plan, spouts, threads, [h for e in executors if isinstance(h := getattr(e, "batch_handoff", None), Handing)])
    if watcher is not None:
        watcher.stop()
    if claim_watch is not None:
        claim_watch.stop()
    for e in executors:
        e.stop()
    for t in threads:
        t.join(30)
    log.info("[%s] worker w%d: cyclic GC %s, threshold %s", plan.name, index, PROCESS_GC.summary(), gc.get_threshold())
    if failed or any(e.error is not None for e in executors):
        log.error("[%s] worker w%d stopping: an executor failed", plan.name, index)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
