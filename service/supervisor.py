"""The supervisor: plans executors onto worker processes and starts, kills and restarts them.

Executors are dealt round-robin onto ``topology.workers`` processes (spouts, then bolts,
then ackers), as Storm's even scheduler does. Tasks move between executors through Kafka
group rebalances, so a worker can die and come back without any other worker restarting.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from acker.common import ACKER_COMPONENT
from service.exceptions import WorkerDied
from streams.config import TopologyConfig
from streams.topology import Topology

log = logging.getLogger("squall.supervisor")


def plan_workers(topology: Topology, conf: TopologyConfig) -> list[list[str]]:
    """``workers[i]`` = the executors (component ids, repeated per executor) of worker i.

    A SparkBolt gets a worker of its own (its Spark driver); its parallelism is its
    task count, and Spark runs the tasks.
    """
    executors: list[str] = []
    spark: list[str] = []
    for cdef in topology.components.values():
        if is_spark_bolt(cdef.obj):
            spark.append(cdef.id)  # one Spark driver per SparkBolt, in its own worker
            continue
        executors += [cdef.id] * cdef.parallelism
    faust = conf.acker_runtime == "faust"
    if not faust:
        executors += [ACKER_COMPONENT] * conf.ackers
    n = max(1, min(conf.workers, len(executors)))
    workers: list[list[str]] = [[] for _ in range(n)]
    for i, e in enumerate(executors):
        workers[i % n].append(e)
    if faust and conf.ackers:
        workers.append([ACKER_COMPONENT])  # faust owns its process's main thread
    workers += [[cid] for cid in spark]
    return workers


def worker_plan(
    topology_file: str | Path,
    topology: Topology,
    conf: TopologyConfig,
    bootstrap: str,
    workdir: Path,
    *,
    service_conf: dict[str, Any] | None = None,
    kafka: dict[str, Any] | None = None,
    metrics_port: int = 0,
    log_level: str = "INFO",
    topology_overrides: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The plan every worker of ``topology`` reads (``python -m service.worker PLAN INDEX``),
    with the executors of each worker from :func:`plan_workers`."""
    return {
        "topology_file": str(Path(topology_file).resolve()),
        "name": topology.name,
        "bootstrap": bootstrap,
        "service_conf": service_conf or {},
        "kafka": kafka or {},
        "workers": plan_workers(topology, conf),
        "metrics_port": metrics_port,
        "log_level": log_level,
        "topology_overrides": topology_overrides or {},
        "workdir": str(Path(workdir).resolve()),
        **(extra or {}),
    }


_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL this worker when its supervisor dies (Linux
    ``PR_SET_PDEATHSIG``), as a machine's workers die with it. Elsewhere a no-op. It only
    calls a function looked up in the parent (no imports or locks after the fork)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn_worker(plan_path: Path, index: int, log_path: Path) -> subprocess.Popen[bytes]:
    """Start worker ``index`` of the plan at ``plan_path``; its output goes to ``log_path``.
    The worker is killed if the process that started it dies."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with open(log_path, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "service.worker", str(plan_path), str(index)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=_die_with_parent,
        )


def log_tail(path: Path, chars: int = 3000) -> str:
    """The last ``chars`` characters of a worker's log (empty if there is none)."""
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def is_spark_bolt(obj: Any) -> bool:
    from streams.spark.bolt import SparkBolt

    return isinstance(obj, SparkBolt)


class Supervisor:
    """Owns the worker processes of one topology on this machine."""

    def __init__(self, topology: Topology, workdir: Path, plan: dict[str, Any]) -> None:
        """``plan``: from :func:`worker_plan` (written to ``workdir/plan.json``)."""
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.topology = topology
        self.plan = plan
        self.workers: list[list[str]] = self.plan["workers"]
        self.plan_path = self.workdir / "plan.json"
        self.plan_path.write_text(json.dumps(self.plan, indent=2))
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.expected_down: set[int] = set()

    def worker_of(self, component: str) -> int:
        """Index of the first worker hosting ``component``. Raises KeyError."""
        for i, comps in enumerate(self.workers):
            if component in comps:
                return i
        raise KeyError(f"[{component}] runs in no worker")

    def log_path(self, i: int) -> Path:
        return self.workdir / f"worker-{i}.log"

    def spawn(self, i: int) -> None:
        self.procs[i] = spawn_worker(self.plan_path, i, self.log_path(i))
        self.expected_down.discard(i)

    def start(self) -> None:
        for i in range(len(self.workers)):
            self.spawn(i)

    def kill(self, i: int, sig: int = signal.SIGKILL) -> None:
        """Kill worker ``i`` (SIGKILL by default: a crash)."""
        self.expected_down.add(i)
        proc = self.procs[i]
        proc.send_signal(sig)
        proc.wait(30)

    def restart(self, i: int) -> None:
        self.spawn(i)

    def check(self) -> None:
        """Raise WorkerDied if a worker exited that nobody stopped on purpose."""
        for i, proc in self.procs.items():
            if i not in self.expected_down and proc.poll() is not None:
                tail = log_tail(self.log_path(i))
                raise WorkerDied(f"[{','.join(self.workers[i])}] worker w{i} exited with {proc.returncode}:\n{tail}")

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM every worker, wait for clean exits, SIGKILL what remains."""
        for i, proc in self.procs.items():
            if proc.poll() is None:
                self.expected_down.add(i)
                proc.terminate()
        deadline = time.monotonic() + timeout_s
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
