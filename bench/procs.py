"""The benches' view of processes: CPU seconds, peak RSS and process trees, from ``/proc`` and ``pgrep`` (Linux)."""

from __future__ import annotations

import os
import subprocess
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


def children(pid: int) -> list[int]:
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        return [int(p) for p in out]
    except OSError:
        return []


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
