"""The benches' view of processes: CPU seconds, peak RSS and process trees, from ``/proc`` (Linux)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import proc_status_bytes

_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds ``pid`` has used (``/proc/<pid>/stat``), None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS


def rss_hwm(pid: int) -> int:
    """Peak resident set (VmHWM, bytes) of ``pid``."""
    return proc_status_bytes(pid, "VmHWM")


def pss(pid: int) -> int:
    """Proportional set size of ``pid`` now (bytes; ``Pss`` of ``/proc/<pid>/smaps_rollup``, Linux 4.14+); 0 if gone.

    A page shared by N processes counts 1/N in each, so the PSS of a process tree sums to the
    memory the tree holds. Summed RSS counts a shared library once per process that maps it:
    a SparkBolt's ~20 Python processes each map pyarrow's ~60 MB of libraries.
    """
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def children(pid: int) -> list[int]:
    """``pid``'s child processes, from ``/proc/<pid>/task/<tid>/children`` (Linux 3.5+).

    No subprocess: the bench reads its contenders' trees while it measures them, and a
    ``pgrep`` per worker per reading (a fork of the bench's own process each) took CPU from the
    contender it measured, more the more workers it has. [] when ``pid`` is gone.
    """
    out: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            out += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue  # the thread ended
    return out


def descendants(pid: int) -> list[int]:
    """``pid``'s whole process tree below it (a Spark driver's JVM and Python workers)."""
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        out += kids
        todo += kids
    return out


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its descendants (0 for those gone)."""
    return sum(cpu_seconds(q) or 0.0 for q in (pid, *descendants(pid)))


def machine_busy() -> tuple[int, int]:
    """``(busy, total)`` clock ticks of all CPUs since boot, from the first line of ``/proc/stat`` (iowait counts as idle)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def wait_quiet(
    busy_below: float = 0.10,
    window_s: float = 1.0,
    timeout_s: float = 30.0,
    read: Callable[[], tuple[int, int]] = machine_busy,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Flush dirty pages (``os.sync``), then wait until the machine was busy under ``busy_below`` of all its CPUs for a ``window_s``-second window.

    A benchmark run starts on a quiet machine this way, not while the broker still writes out
    what the run before it produced. Returns the seconds waited (whole windows; at most
    ``timeout_s``, after which it returns anyway: a machine busy with something else is the
    run's to report, not a reason to stall the bench). ``read`` and ``sleep`` are injected for tests.
    """
    os.sync()
    waited = 0.0
    last = read()
    while waited < timeout_s:
        sleep(window_s)
        waited += window_s
        now = read()
        busy, total = now[0] - last[0], now[1] - last[1]
        last = now
        if total > 0 and busy / total < busy_below:
            break
    return waited
