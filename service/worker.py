"""A worker process: hosts executors (threads) for one topology.

Run by the supervisor as ``python -m service.worker PLAN.json INDEX``. SIGTERM stops it
cleanly (executors flush, commit and publish final stats); SIGKILL is a crash.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from acker.runtime_native import AckerExecutor
from service.control_log import ControlTopics
from service.drain import draining_elsewhere
from service.metrics import StatsCollector, serve
from service.status_watch import StatusWatcher
from service.supervisor import is_spark_bolt, parse_plan_workers
from streams.config import resolve
from streams.kafka.clients import at_high_watermarks
from streams.model.context import LocalTasks
from streams.model.loader import load_topology
from streams.monitoring.board import StatsBoard
from streams.runtime.bolt import BoltExecutor
from streams.runtime.executor import Executor
from streams.runtime.spout import SpoutExecutor
from streams.wire.naming import ACKER_COMPONENT

log = logging.getLogger("squall.worker")


def build_executors(plan: dict[str, Any], index: int) -> list[Executor]:
    topology = load_topology(plan["topology_file"], plan["name"])
    topology.conf.update(plan.get("topology_overrides", {}))  # e.g. a benchmark's ackers=0
    service_layer = plan.get("service_conf", {})
    local = LocalTasks()
    worker = f"w{index}"
    kafka = plan.get("kafka", {})
    out: list[Executor] = []
    for component, tasks in parse_plan_workers(plan["workers"])[index]:
        if component == ACKER_COMPONENT:
            conf = resolve(service_layer, topology.conf, where=component)
            if conf.acker_runtime == "faust":
                from acker.runtime_faust import FaustAckerExecutor

                out.append(FaustAckerExecutor(topology, component, conf, plan["bootstrap"], worker, local, kafka))
            else:
                out.append(AckerExecutor(topology, component, conf, plan["bootstrap"], worker, local, kafka, tasks))
            continue
        cdef = topology.components[component]
        conf = resolve(service_layer, topology.conf, cdef.conf, where=component)
        if is_spark_bolt(cdef.obj):
            from streams.spark.runtime import SparkBoltExecutor

            out.append(SparkBoltExecutor(topology, component, conf, plan["bootstrap"], worker, local, kafka, plan=plan))
            continue
        cls = SpoutExecutor if cdef.is_spout else BoltExecutor
        out.append(cls(topology, component, conf, plan["bootstrap"], worker, local, kafka, tasks))
    return out


def drain(plan: dict[str, Any], spouts: list[SpoutExecutor], threads: list[threading.Thread]) -> None:
    """SIGTERM: let trees in flight finish before stopping (:mod:`service.drain`). Under
    ``squall serve`` a worker also waits for spouts draining elsewhere; under ``squall
    run`` only for its own spouts."""
    timeout = float(plan.get("shutdown_timeout_secs", 30.0))
    deadline = time.monotonic() + timeout
    for s in spouts:
        s.drain()
    if not plan.get("control"):
        while time.monotonic() < deadline and all(t.is_alive() for t in threads) and any(len(s.inflight) for s in spouts):
            time.sleep(0.05)
        return
    board = StatsBoard(plan["bootstrap"], plan["name"])
    grace = time.monotonic() + 2.5  # draining spouts elsewhere publish their flag within a stats interval
    caught_up = False  # the stats topic read to its end at least once (a slow first read must not look idle)
    try:
        while time.monotonic() < deadline and all(t.is_alive() for t in threads):
            board.poll(0.2)
            caught_up = caught_up or at_high_watermarks(board.consumer, board.consumer.assignment())
            local = sum(len(s.inflight) for s in spouts)
            if local == 0 and caught_up and time.monotonic() >= grace and not draining_elsewhere(board.latest.values(), time.time()):
                break
        log.info("[%s] drained in %.1f s", plan["name"], timeout - (deadline - time.monotonic()))
    finally:
        board.close()


def tune_gc(threshold: int) -> None:
    """Set the young-generation threshold of Python's cyclic GC to ``threshold`` allocations
    (``squall.worker.gc.threshold``; 0 leaves Python's 700), keeping the older generations'.

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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    plan = json.loads(Path(argv[0]).read_text())
    index = int(argv[1])
    logging.basicConfig(
        level=plan.get("log_level", "INFO"),
        format=f"%(asctime)s w{index} %(levelname)s %(name)s %(message)s",
    )
    executors = build_executors(plan, index)
    if executors:
        tune_gc(executors[0].conf.worker_gc_threshold)  # a topology-level setting: every executor has it
    faust = [e for e in executors if hasattr(e, "run_blocking")]
    if faust:
        log.info("[%s] worker w%d running the faust acker", plan["name"], index)
        faust[0].run_blocking()
        return 0
    registry = CollectorRegistry()
    registry.register(StatsCollector(lambda: [s for e in executors for s in e.all_stats()]))
    if plan.get("metrics_port"):
        serve(registry, int(plan["metrics_port"]) + index, plan.get("metrics_host", "127.0.0.1"))
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    spouts = [e for e in executors if isinstance(e, SpoutExecutor)]
    watcher = (
        StatusWatcher(
            plan["bootstrap"],
            ControlTopics(plan.get("control_namespace", "squall")),
            plan["name"],
            [s.active for s in spouts],
            plan.get("kafka", {}).get("consumer"),
        )
        if plan.get("control")
        else None
    )
    if watcher is not None:
        watcher.start()
    threads = [threading.Thread(target=e.run, name=f"{e.component}-{i}", daemon=True) for i, e in enumerate(executors)]
    for t in threads:
        t.start()
    log.info("[%s] worker w%d running %s", plan["name"], index, [e.component for e in executors])
    ready = Path(plan["workdir"]) / f"worker-{index}.ready"
    failed = False
    while not stop.wait(0.2):
        if any(not t.is_alive() for t in threads):
            failed = any(e.error is not None for e in executors)
            break
        if not ready.exists() and all(e.assigned.is_set() for e in executors):
            ready.write_text(str(os.getpid()))
    if not failed:
        drain(plan, spouts, threads)
    if watcher is not None:
        watcher.stop()
    for e in executors:
        e.stop()
    for t in threads:
        t.join(30)
    if failed or any(e.error is not None for e in executors):
        log.error("[%s] worker w%d stopping: an executor failed", plan["name"], index)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
