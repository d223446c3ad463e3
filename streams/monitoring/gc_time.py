"""Seconds Python's cyclic garbage collector ran in this process, per generation (``gc.callbacks``).

A reliable topology keeps objects alive on purpose (a spout task's pending trees, a bolt's tuples
until its tick), and each collection walks the live objects of its generations. How much that
costs depends on the workload and ``squall.worker.gc.threshold``, so a worker measures it: every
executor's stats snapshot carries the process's ``process_gc_seconds``
(``squall_worker_gc_seconds_total``), and the worker logs its totals when it stops.

The clock is injected (default ``time.perf_counter``); wall seconds, not CPU: a collection holds
the GIL throughout, so in a worker its wall time is the time no Python thread ran.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

GENERATIONS = 3
"""Python's cyclic GC generations: 0 (young), 1, 2 (oldest; a full collection)."""


class GcTime:
    """Collections and seconds per generation since :meth:`install`.

    >>> t = GcTime(clock=iter([1.0, 1.25]).__next__)
    >>> t.callback("start", {"generation": 0}); t.callback("stop", {"generation": 0})
    >>> t.collections, t.seconds, t.total_seconds
    ([1, 0, 0], [0.25, 0.0, 0.0], 0.25)
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.collections = [0] * GENERATIONS
        self.seconds = [0.0] * GENERATIONS
        self.installed = False
        self._started = 0.0

    @property
    def total_seconds(self) -> float:
        """Seconds of every generation's collections together."""
        return sum(self.seconds)

    def callback(self, phase: str, info: dict[str, Any]) -> None:
        """``gc.callbacks`` entry: ``phase`` is ``"start"`` or ``"stop"``, ``info["generation"]`` 0..2."""
        if phase == "start":
            self._started = self.clock()
            return
        gen = int(info.get("generation", GENERATIONS - 1))
        self.collections[gen] += 1
        self.seconds[gen] += self.clock() - self._started

    def install(self) -> GcTime:
        """Start counting (idempotent); returns self."""
        if not self.installed:
            gc.callbacks.append(self.callback)
            self.installed = True
        return self

    def uninstall(self) -> None:
        """Stop counting; the totals stay."""
        if self.installed:
            gc.callbacks.remove(self.callback)
            self.installed = False

    def summary(self) -> str:
        """One line: ``0.84 s in 312 collections (gen0 300: 0.61 s, gen1 11: 0.15 s, gen2 1: 0.08 s)``."""
        per = ", ".join(f"gen{g} {self.collections[g]}: {self.seconds[g]:.2f} s" for g in range(GENERATIONS))
        return f"{self.total_seconds:.2f} s in {sum(self.collections)} collections ({per})"


PROCESS_GC = GcTime()
"""This process's clock, installed by a worker (service/worker/process.py) and read by its executors' stats."""
