"""Hung workers: an executor whose loop stopped coming round, or a worker process that stopped altogether (pure).

Two checks, because a hang can stop either side:

* **in the worker** (:func:`stalled`): every executor marks each round of its loop
  (``Executor.beat``); the worker's main thread finds those that have not come round for
  ``squall.worker.hang.timeout.secs`` once they are running (a bolt stuck in ``execute``, a
  client call that never returns). The worker then logs each one's name and Python stack (the
  line it is blocked on: ``service.worker.process.stack_of``), exits with :data:`HUNG_EXIT_CODE`,
  and its supervisor restarts it as after a crash (backoff, events, give up);
* **in the supervisor** (:func:`heartbeat_stale`): the worker's main thread touches a heartbeat
  file every round; a file older than the timeout means the whole process stopped (deadlocked,
  SIGSTOPped, swapping), and the supervisor SIGKILLs it, which is then a crash too.

Storm's supervisor restarts a worker whose heartbeat is older than ``supervisor.worker.timeout.secs``,
but its heartbeat comes from a timer thread, so an executor stuck in user code looks alive.

>>> stalled({"split": 100.0, "count": 10.0}, now=140.0, timeout_s=120.0)
['count']
>>> heartbeat_stale(mtime=None, started=0.0, now=500.0, timeout_s=120.0)
False
>>> heartbeat_stale(mtime=10.0, started=0.0, now=200.0, timeout_s=120.0)
True
"""

from __future__ import annotations

from pathlib import Path

HUNG_EXIT_CODE = 3
"""What a worker exits with when one of its executors hung (a crash to its supervisor)."""


def stalled(beats: dict[str, float], now: float, timeout_s: float) -> list[str]:
    """The executors (by name) whose last beat is more than ``timeout_s`` before ``now`` (seconds; 0 disables), sorted."""
    if timeout_s <= 0:
        return []
    return sorted(name for name, beat in beats.items() if now - beat > timeout_s)


def heartbeat_stale(mtime: float | None, started: float, now: float, timeout_s: float) -> bool:
    """Whether a worker's heartbeat file says the process stopped.

    ``mtime``: the file's modification time (None: not written yet: a worker still starting, or
    one that writes none, as the faust acker's); ``started``: when the worker was started; all
    in seconds of the same clock. 0 disables.
    """
    if timeout_s <= 0 or mtime is None:
        return False
    return now - max(mtime, started) > timeout_s


def heartbeat_path(workdir: str | Path, index: int) -> Path:
    """Worker ``index``'s heartbeat file in its plan's ``workdir`` (next to its ready file)."""
    return Path(workdir) / f"worker-{index}.heartbeat"


def heartbeat_mtime(path: Path) -> float | None:
    """The heartbeat file's modification time (seconds since the epoch), None if there is none."""
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return None
