"""A worker's view of its topology's control record: are the spouts active, and at which levels do its loggers log?

A thread tails ``squall.__control`` and sets or clears each spout executor's ``active``
event (``activate``/``deactivate``/``kill``). Until it has caught up, spouts stay paused,
so a worker started for an INACTIVE topology never emits. It also applies the record's
``log_levels`` (``squall set_log_level``), and puts a logger back when its time is up, and
passes the record's ``debug`` (``squall debug``, the UI's debug action) to its executors, which
start or stop tracing live.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from service.control.log import ControlLog, ControlTopics
from service.control.log_levels import LevelSetter, effective
from service.control.record import trace_rate

log = logging.getLogger("squall.worker")


class StatusWatcher:
    """Mirrors ``topology``'s status into ``events`` (set = spouts may emit).

    Thread safety: runs its own daemon thread; :meth:`stop` from any thread.
    """

    def __init__(
        self,
        bootstrap: str,
        names: ControlTopics,
        topology: str,
        events: list[threading.Event],
        overrides: dict[str, Any] | None = None,
        on_trace: Callable[[float], None] | None = None,
    ) -> None:
        self.topology = topology
        self.on_trace = on_trace
        """``on_trace(rate)``: the record's ``debug`` changed (rate 0..1; 0: off)."""
        self.trace_rate: float | None = None
        """The rate last passed to :attr:`on_trace` (None: the topology's own conf)."""
        self.events = events
        self.log = ControlLog(bootstrap, names, overrides)
        self._stop = threading.Event()
        self.levels = LevelSetter()
        """The loggers ``squall set_log_level`` changed in this worker (reverted when they expire or are reset)."""
        self.thread = threading.Thread(target=self._run, name=f"status-{topology}", daemon=True)
        for e in events:
            e.clear()

    def start(self) -> None:
        """Start tailing the control topic in a daemon thread."""
        self.thread.start()

    def _run(self) -> None:
        active: bool | None = None
        try:
            while not self._stop.is_set():
                self.log.poll(0.2)
                if not self.log.caught_up():
                    continue
                rec = self.log.records.get(self.topology)
                for change in self.levels.apply(effective(rec.log_levels if rec is not None else {}, time.time())):
                    log.info("[%s] %s (squall set_log_level)", self.topology, change)
                rate = trace_rate(rec) if rec is not None else None
                if rate is not None and rate != self.trace_rate and self.on_trace is not None:
                    self.trace_rate = rate
                    log.info("[%s] tracing %s (squall debug)", self.topology, f"{rate:.2%} of the trees" if rate else "off")
                    self.on_trace(rate)
                now_active = rec is not None and rec.spouts_active
                if now_active != active:
                    active = now_active
                    log.info("[%s] spouts %s", self.topology, "active" if active else "paused")
                    for e in self.events:
                        if active:
                            e.set()
                        else:
                            e.clear()
        finally:
            self.log.close()

    def stop(self) -> None:
        """Stop tailing and close the consumer."""
        self._stop.set()
