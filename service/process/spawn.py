"""Starting worker processes (``python -m service.worker PLAN INDEX``) that die with the process that started them, as a machine's workers die with it.

Used by :class:`service.run.local.LocalCluster` (``squall run``) and by the supervisor
(:mod:`service.supervisor.daemon`, ``squall serve``).
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from streams.runtime.fencing import new_epoch

CLAIM_ENV = "SQUALL_CLAIM_ID"
"""The environment variable that gives a worker the id of its own ``started`` record (:mod:`service.worker.claim_watch`)."""

EPOCH_ENV = "SQUALL_CLAIM_EPOCH"
"""The environment variable that gives a worker its claim epoch (:meth:`service.control.claims.ClaimBook.next_epoch`, :mod:`streams.runtime.fencing`)."""


def worker_epoch(clock: Callable[[], float] = time.time) -> int:
    """This worker's claim epoch: :data:`EPOCH_ENV` if its supervisor set it, else its start time in ms (``squall run``)."""
    given = os.environ.get(EPOCH_ENV, "")
    return int(given) if given.isdigit() else new_epoch(clock)


_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child, before exec: SIGKILL this worker when its supervisor dies (Linux ``PR_SET_PDEATHSIG``), as a machine's workers die with it.

    Elsewhere a no-op. It only calls a function looked up in the parent (no imports or locks
    after the fork).
    """
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn_worker(
    plan_path: Path, index: int, log_path: Path, claim: str = "", epoch: int = 0, python: str = "", paths: tuple[str, ...] = ()
) -> subprocess.Popen[bytes]:
    """Start worker ``index`` of the plan at ``plan_path``; its output goes to ``log_path``.

    The worker is killed if the process that started it dies. ``claim``: the id its
    supervisor puts in the worker's ``started`` record, so the worker knows its own claim
    among the events (:mod:`service.worker.claim_watch`; a pid can recur, a claim id does not);
    ``epoch``: its claim epoch (:data:`EPOCH_ENV`; 0: the worker takes its start time);
    ``python``: the interpreter (a topology's dependency bundle's virtualenv; empty: this one);
    ``paths``: directories put first on its import path (the bundle's package).
    """
    env = dict(os.environ)
    if claim:
        env[CLAIM_ENV] = claim
    if epoch > 0:
        env[EPOCH_ENV] = str(epoch)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([*paths, root]) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with open(log_path, "ab") as out:
        return subprocess.Popen(
            [python or sys.executable, "-m", "service.worker", str(plan_path), str(index)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=die_with_parent,
        )


def log_tail(path: Path, chars: int = 3000) -> str:
    """The last ``chars`` characters of a worker's log (empty if there is none)."""
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b(: .*)?$")


def last_error(tail: str) -> str:
    r"""The line of a worker's log tail that says why it exited: its last exception (``RuntimeError: ...``), else its last line.

    >>> last_error("x\nTraceback (most recent call last):\n  File ...\nRuntimeError: no SPLIT_MODE\nw2 ERROR worker stopping\n")
    'RuntimeError: no SPLIT_MODE'
    >>> last_error(""), last_error("only line\n")
    ('no output', 'only line')
    """
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return next((line for line in reversed(lines) if EXCEPTION_LINE.match(line)), lines[-1] if lines else "no output")
