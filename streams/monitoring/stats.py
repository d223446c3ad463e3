"""Executor statistics.

Plain counters on the hot path, read by Prometheus at scrape time (:mod:`service.worker.metrics`)
and published as JSON snapshots on ``squall.T.__metrics``.
"""

from __future__ import annotations

import math
import os
import resource
import time
import uuid
from typing import Any

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def process_usage() -> tuple[float, float]:
    """This process's ``(CPU seconds, user + system; resident memory, bytes)``."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    try:
        with open("/proc/self/statm") as f:
            return cpu, float(int(f.read().split()[1]) * _PAGE)
    except OSError:
        return cpu, float(usage.ru_maxrss * 1024)  # the peak, where /proc is missing


class LogHistogram:
    """Mergeable log-bucket histogram of seconds (relative error <= ``ratio - 1``).

    Bucket ``i`` covers ``[MIN * RATIO**i, MIN * RATIO**(i+1))``; values below MIN go to 0.
    """

    MIN = 1e-4
    RATIO = 1.05
    _LOG = math.log(RATIO)

    __slots__ = ("count", "counts", "total")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.count = 0
        self.total = 0.0

    def record(self, seconds: float, weight: int = 1) -> None:
        """Count an observation of ``seconds``, ``weight`` times (a sample standing for ``weight`` observations)."""
        i = int(math.log(seconds / self.MIN) / self._LOG) if seconds > self.MIN else 0
        self.counts[i] = self.counts.get(i, 0) + weight
        self.count += weight
        self.total += seconds * weight

    def merge(self, other: LogHistogram) -> None:
        """Add ``other``'s observations to this histogram."""
        for i, c in other.counts.items():
            self.counts[i] = self.counts.get(i, 0) + c
        self.count += other.count
        self.total += other.total

    def quantile(self, q: float) -> float:
        """The ``q`` quantile (0..1) in seconds, or NaN when empty (bucket midpoint)."""
        if not self.count:
            return math.nan
        rank = q * self.count
        seen = 0
        for i in sorted(self.counts):
            seen += self.counts[i]
            if seen >= rank:
                return float(self.MIN * self.RATIO ** (i + 0.5))
        return float(self.MIN * self.RATIO ** (max(self.counts) + 0.5))

    def upper_bound(self, i: int) -> float:
        """The upper edge of bucket ``i`` in seconds (Prometheus ``le``)."""
        return self.MIN * self.RATIO ** (i + 1)

    def to_json(self) -> dict[str, Any]:
        """``{"counts": {bucket: n}, "count": n, "sum": seconds}`` (the stats snapshot's form)."""
        return {"counts": {str(k): v for k, v in self.counts.items()}, "count": self.count, "sum": self.total}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LogHistogram:
        """The histogram :meth:`to_json` wrote."""
        h = cls()
        h.counts = {int(k): int(v) for k, v in data.get("counts", {}).items()}
        h.count = int(data.get("count", 0))
        h.total = float(data.get("sum", 0.0))
        return h


class ExecutorStats:
    """Counters, gauges and histograms of one executor instance.

    ``counters`` are monotonic totals (Prometheus ``_total``), ``gauges`` current values,
    ``hists`` latencies in seconds. ``instance`` is unique per executor start, so a
    restarted executor's counters add to, never replace, the old ones.
    """

    def __init__(self, topology: str, component: str, kind: str, worker: str) -> None:
        self.topology = topology
        self.component = component
        self.kind = kind
        self.worker = worker
        self.instance = uuid.uuid4().hex[:12]
        self.pid = os.getpid()
        self.started = time.time()
        self.counters: dict[str, float] = {}
        self.gauges: dict[str, float] = {}
        self.hists: dict[str, LogHistogram] = {}
        self.partition_lag: dict[str, int] = {}
        self.tasks: list[int] = []
        self.registered: set[str] = set()
        """Counter names the tasks registered (``TopologyContext.register_metric``): exported as their own families."""
        self.errors: dict[str, dict[str, int]] = {}
        """Errors reported, ``cause -> exception type -> count`` (:class:`streams.monitoring.errors.ErrorLog` fills it)."""

    def inc(self, name: str, n: float = 1) -> None:
        """Add ``n`` to counter ``name`` (a monotonic total)."""
        self.counters[name] = self.counters.get(name, 0) + n

    def hist(self, name: str) -> LogHistogram:
        """Histogram ``name`` (seconds), created empty on first use."""
        h = self.hists.get(name)
        if h is None:
            h = self.hists[name] = LogHistogram()
        return h

    def snapshot(self, final: bool = False) -> dict[str, Any]:
        """The JSON snapshot (``schemas/stats.schema.json``)."""
        return {
            "topology": self.topology,
            "component": self.component,
            "kind": self.kind,
            "worker": self.worker,
            "instance": self.instance,
            "pid": self.pid,
            "time": time.time(),
            "final": final,
            "counters": dict(self.counters),
            "gauges": dict(self.gauges),
            "lag": dict(self.partition_lag),
            "tasks": list(self.tasks),
            "hists": {k: v.to_json() for k, v in self.hists.items()},
            "registered": sorted(self.registered),
            "errors": {cause: dict(by_type) for cause, by_type in self.errors.items()},
        }
