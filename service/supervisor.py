"""The supervisor: plans executors onto worker processes and starts, kills and restarts them.

Executors are dealt round-robin onto ``topology.workers`` processes (spouts, then bolts,
then ackers), as Storm's even scheduler does, each with fixed tasks
(:mod:`service.scheduling`). A worker that dies comes back with the same tasks, and no
other worker notices.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from service.exceptions import WorkerDied
from service.restarts import CrashHistory, RestartPolicy
from service.scheduling import ExecutorAssignment, executor_tasks, worker_components
from streams.config import TopologyConfig
from streams.model.spec import Topology
from streams.wire.naming import ACKER_COMPONENT

log = logging.getLogger("squall.supervisor")


def plan_workers(topology: Topology, conf: TopologyConfig) -> list[list[ExecutorAssignment]]:
    """``workers[i]`` = the executors of worker ``i``, each with its fixed tasks.

    Executors are dealt round-robin (spouts, then bolts, then ackers), as Storm's even
    scheduler does; a component's executors own contiguous task ranges
    (:func:`service.scheduling.executor_tasks`). A SparkBolt gets a worker of its own (its
    Spark driver), which runs all its tasks. The faust acker runtime assigns its tasks
    through its own Kafka group, so its one executor lists every acker task.
    """
    executors: list[ExecutorAssignment] = []
    spark: list[ExecutorAssignment] = []
    for cdef in topology.components.values():
        if is_spark_bolt(cdef.obj):
            spark.append(ExecutorAssignment(cdef.id, tuple(range(cdef.num_tasks))))
            continue
        executors += [ExecutorAssignment(cdef.id, tasks) for tasks in executor_tasks(cdef.num_tasks, min(cdef.parallelism, cdef.num_tasks))]
    faust = conf.acker_runtime == "faust"
    if not faust:
        executors += [ExecutorAssignment(ACKER_COMPONENT, (t,)) for t in range(conf.ackers)]
    n = max(1, min(conf.workers, len(executors)))
    workers: list[list[ExecutorAssignment]] = [[] for _ in range(n)]
    for i, e in enumerate(executors):
        workers[i % n].append(e)
    if faust and conf.ackers:
        workers.append([ExecutorAssignment(ACKER_COMPONENT, tuple(range(conf.ackers)))])  # faust owns its process's main thread
    workers += [[e] for e in spark]
    return workers


def plan_json(workers: list[list[ExecutorAssignment]]) -> list[list[list[Any]]]:
    """The plan file's form of :func:`plan_workers`."""
    return [[e.to_json() for e in w] for w in workers]


def parse_plan_workers(raw: list[list[list[Any]]]) -> list[list[ExecutorAssignment]]:
    """Read the plan file's ``workers``. Raises ValueError on a malformed entry."""
    return [[ExecutorAssignment.from_json(e) for e in w] for w in raw]


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
        "workers": plan_json(plan_workers(topology, conf)),
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
    """Owns the worker processes of one topology on this machine (``squall run``).

    A worker that exits unexpectedly is restarted with the same tasks after a backoff
    (:mod:`service.restarts`); one that keeps crashing is given up on, and :meth:`check`
    then raises :class:`WorkerDied` naming its components, with the last lines of its log.

    Args:
      topology: the loaded topology.
      workdir: where the plan and the worker logs go.
      plan: from :func:`worker_plan` (written to ``workdir/plan.json``).
      policy: crash backoff and give-up (default :class:`RestartPolicy`).
      clock: monotonic seconds (injected for tests).
    Not thread-safe: one thread calls everything.
    """

    def __init__(
        self, topology: Topology, workdir: Path, plan: dict[str, Any], policy: RestartPolicy | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.topology = topology
        self.plan = plan
        self.workers = parse_plan_workers(self.plan["workers"])
        self.plan_path = self.workdir / "plan.json"
        self.plan_path.write_text(json.dumps(self.plan, indent=2))
        self.policy = policy or RestartPolicy()
        self.clock = clock
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.expected_down: set[int] = set()
        self.crashes: dict[int, CrashHistory] = {}
        self.restart_at: dict[int, float] = {}
        self.restarts = 0
        """Workers restarted after an unexpected exit (``squall_worker_restarts_total``)."""

    def components(self, i: int) -> list[str]:
        """The component ids of worker ``i``'s executors."""
        return worker_components(self.workers[i])

    def worker_of(self, component: str) -> int:
        """Index of the first worker hosting ``component``. Raises KeyError."""
        for i in range(len(self.workers)):
            if component in self.components(i):
                return i
        raise KeyError(f"[{component}] runs in no worker")

    def log_path(self, i: int) -> Path:
        return self.workdir / f"worker-{i}.log"

    def spawn(self, i: int) -> None:
        self.procs[i] = spawn_worker(self.plan_path, i, self.log_path(i))
        self.expected_down.discard(i)
        self.restart_at.pop(i, None)

    def start(self) -> None:
        for i in range(len(self.workers)):
            self.spawn(i)

    def kill(self, i: int, sig: int = signal.SIGKILL) -> None:
        """Kill worker ``i`` (SIGKILL by default: a crash) and keep it down until :meth:`restart`."""
        self.expected_down.add(i)
        proc = self.procs[i]
        proc.send_signal(sig)
        proc.wait(30)

    def restart(self, i: int) -> None:
        self.spawn(i)

    def check(self) -> None:
        """Restart workers that exited unexpectedly, after their backoff. Raises
        WorkerDied once a worker crashed ``give_up_after`` times within the window."""
        now = self.clock()
        for i, proc in list(self.procs.items()):
            if i in self.expected_down:
                continue
            if i in self.restart_at:
                if now >= self.restart_at[i]:
                    log.warning("[%s] restarting worker w%d", ",".join(self.components(i)), i)
                    self.spawn(i)
                    self.restarts += 1
                continue
            code = proc.poll()
            if code is None:
                continue
            comps = ",".join(dict.fromkeys(self.components(i)))
            history = self.crashes.setdefault(i, CrashHistory(self.policy))
            delay = history.crashed(now)
            tail = log_tail(self.log_path(i))
            if delay is None:
                raise WorkerDied(
                    f"[{comps}] worker w{i} exited with {code}, {len(history.crashes)} times within {self.policy.window_s:g} s: "
                    f"giving up. Last lines of {self.log_path(i)}:\n{tail}"
                )
            log.warning("[%s] worker w%d exited with %s: restarting it in %.1f s", comps, i, code, delay)
            self.restart_at[i] = now + delay

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM every worker, wait for clean exits, SIGKILL what remains."""
        self.restart_at.clear()
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
