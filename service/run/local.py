"""One topology's worker processes on this machine, for ``squall run`` (Storm's ``LocalCluster``).

"Supervisor" means only ``squall serve`` (:mod:`service.supervisor.daemon`); this is its one-shot
counterpart: it starts every worker of a plan, restarts a worker that exits unexpectedly
with the same tasks (after a backoff), and stops them all. No other worker notices a restart.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from service.control.scheduling import WorkerPlan, worker_components
from service.exceptions import WorkerDied
from service.process.hang import heartbeat_mtime, heartbeat_path, heartbeat_stale
from service.process.restarts import CrashHistory, RestartPolicy
from service.process.spawn import log_tail, spawn_worker
from streams.model.spec import Topology

log = logging.getLogger("squall.local")


class LocalCluster:
    """Owns the worker processes of one topology on this machine (``squall run``).

    A worker that exits unexpectedly is restarted with the same tasks after a backoff
    (:mod:`service.process.restarts`); one that keeps crashing is given up on, and :meth:`check`
    then raises :class:`WorkerDied` naming its components, with the last lines of its log.

    Args:
      topology: the loaded topology.
      workdir: where the plan and the worker logs go.
      plan: from :func:`service.control.scheduling.worker_plan` (written to ``workdir/plan.json``).
      policy: crash backoff and give-up (default :class:`RestartPolicy`).
      clock: monotonic seconds (injected for tests).
      hang_timeout_s: a worker whose heartbeat file is older than this is SIGKILLed, then
        restarted as after a crash (:mod:`service.process.hang`; seconds, 0: never).
    Not thread-safe: one thread calls everything.
    """

    def __init__(
        self,
        topology: Topology,
        workdir: Path,
        plan: WorkerPlan,
        policy: RestartPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
        hang_timeout_s: float = 0.0,
    ) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.topology = topology
        self.plan = plan
        self.workers = plan.workers
        self.plan_path = self.workdir / "plan.json"
        self.plan_path.write_text(plan.to_json())
        self.policy = policy or RestartPolicy()
        self.clock = clock
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.expected_down: set[int] = set()
        self.crashes: dict[int, CrashHistory] = {}
        self.restart_at: dict[int, float] = {}
        self.restarts = 0
        """Workers restarted after an unexpected exit (``squall_worker_restarts_total``)."""
        self.hang_timeout_s = hang_timeout_s
        self.started_at: dict[int, float] = {}
        """Wall-clock start of each worker (seconds since the epoch: heartbeat files' clock)."""
        self.hung = 0
        """Workers killed because their process stopped (stale heartbeat)."""

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
        """Worker ``i``'s log file."""
        return self.workdir / f"worker-{i}.log"

    def spawn(self, i: int) -> None:
        """Start worker ``i`` (again)."""
        heartbeat_path(self.plan.workdir, i).unlink(missing_ok=True)
        self.started_at[i] = time.time()
        self.procs[i] = spawn_worker(self.plan_path, i, self.log_path(i))
        self.expected_down.discard(i)
        self.restart_at.pop(i, None)

    def start(self) -> None:
        """Start every worker of the plan."""
        for i in range(len(self.workers)):
            self.spawn(i)

    def kill(self, i: int, sig: int = signal.SIGKILL) -> None:
        """Kill worker ``i`` (SIGKILL by default: a crash) and keep it down until :meth:`restart`."""
        self.expected_down.add(i)
        proc = self.procs[i]
        proc.send_signal(sig)
        proc.wait(30)

    def restart(self, i: int) -> None:
        """Start worker ``i`` after :meth:`kill`."""
        self.spawn(i)

    def check(self) -> None:
        """Restart workers that exited unexpectedly, after their backoff.

        Raises WorkerDied once a worker crashed ``give_up_after`` times within the window.
        """
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
                self._kill_if_hung(i, proc)
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

    def _kill_if_hung(self, i: int, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL worker ``i`` if its heartbeat file stopped (the next :meth:`check` restarts it)."""
        mtime = heartbeat_mtime(heartbeat_path(self.plan.workdir, i))
        if heartbeat_stale(mtime, self.started_at.get(i, 0.0), time.time(), self.hang_timeout_s):
            self.hung += 1
            log.error(
                "[%s] worker w%d (pid %d): no heartbeat for %.0f s: the process is hung; killing it",
                ",".join(self.components(i)),
                i,
                proc.pid,
                self.hang_timeout_s,
            )
            proc.kill()
            proc.wait(30)

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
