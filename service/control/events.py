"""A supervisor's worker events (started, stopped, crashed, fenced, refused), written to ``squall.__events`` and never lost.

The events topic is what ``squall kill`` waits on (a ``stopped`` per worker), what
``squall status`` reads, and where the other supervisors learn who claims a task
(:mod:`service.control.claims`). A write the broker did not confirm (a broker pause, a lossy
link) is kept and written again at the next round, oldest first, so a worker's exit is
recorded as soon as the broker takes writes again. After a failed write the kept events wait
``retry_every_s`` before the next try, so a broker that is down does not stall every round of the
supervisor for a write's timeout.

>>> sent = []
>>> from streams.exceptions import SquallError
>>> class Flaky:
...     down = True
...     def event(self, topology, event):
...         if self.down:
...             raise SquallError("not confirmed")
...         sent.append((topology, event["event"]))
>>> writer = Flaky()
>>> rec = EventRecorder("h1", lambda: writer, retry_every_s=0.0)
>>> rec.record("wc", {"event": "stopped", "worker": 0})
False
>>> writer.down = False
>>> rec.retry(), sent
(1, [('wc', 'stopped')])
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

log = logging.getLogger("squall.serve")

MAX_KEPT = 10_000
"""Unconfirmed events kept for the next try; the oldest are dropped (and logged) past this."""


class EventWriter(Protocol):
    """What writes one event (:class:`service.control.log.ControlWriter`)."""

    def event(self, topology: str, event: dict[str, Any]) -> None:
        """Write ``event`` of ``topology``, confirmed. Raises when it is not."""


class EventRecorder:
    """Writes events through ``writer()`` (None before the supervisor connects) and keeps the unconfirmed ones.

    Args:
      supervisor: this supervisor's id (log lines).
      writer: returns the current writer, or None.
      retry_every_s: after a failed write, seconds before the kept events are tried again.
      clock: monotonic seconds (injectable).
    """

    def __init__(
        self, supervisor: str, writer: Callable[[], EventWriter | None], retry_every_s: float = 2.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.supervisor = supervisor
        self.writer = writer
        self.retry_every_s = retry_every_s
        self.clock = clock
        self.pending: deque[tuple[str, dict[str, Any]]] = deque()
        """Events not confirmed yet, oldest first."""
        self.next_try = 0.0
        """When the kept events may be tried again (``clock`` seconds)."""

    def record(self, topology: str, event: dict[str, Any], keep: bool = True) -> bool:
        """Write ``event`` of ``topology`` after the older unconfirmed ones; returns whether all of them are confirmed.

        ``keep=False``: an event that is pointless later (a ``started`` whose worker is
        stopped when it is not confirmed) is not kept.
        """
        self.retry()
        if not self.pending and self._send(topology, event):
            return True
        if keep:
            self._keep(topology, event)
        return False

    def retry(self, force: bool = False) -> int:
        """Write the kept events, oldest first, until one fails; returns how many were confirmed.

        Before ``next_try`` (a write failed less than ``retry_every_s`` ago) it writes nothing, unless ``force``.
        """
        if not self.pending or (not force and self.clock() < self.next_try):
            return 0
        done = 0
        while self.pending:
            topology, event = self.pending[0]
            if not self._send(topology, event):
                break
            self.pending.popleft()
            done += 1
        if done:
            log.warning("[supervisor %s] recorded %d worker events late; %d still unconfirmed", self.supervisor, done, len(self.pending))
        return done

    def last_tries(self, tries: int, pause_s: float) -> None:
        """At shutdown: try the kept events up to ``tries`` times, ``pause_s`` seconds apart, whatever ``next_try`` says."""
        for _ in range(tries):
            self.retry(force=True)
            if not self.pending:
                return
            time.sleep(pause_s)

    def _keep(self, topology: str, event: dict[str, Any]) -> None:
        self.pending.append((topology, event))
        while len(self.pending) > MAX_KEPT:
            old_topology, old = self.pending.popleft()
            log.error("[supervisor %s] dropped unconfirmed worker event %s of %s: over %d kept", self.supervisor, old.get("event"), old_topology, MAX_KEPT)

    def _send(self, topology: str, event: dict[str, Any]) -> bool:
        writer = self.writer()
        if writer is None:
            return False
        try:
            writer.event(topology, event)
        except Exception as exc:  # BrokerError, or the client's own (a full queue): kept either way
            self.next_try = self.clock() + self.retry_every_s
            log.warning(
                "[supervisor %s] could not record worker event %s of %s (kept; tried again in %.0f s): %s",
                self.supervisor,
                event.get("event"),
                topology,
                self.retry_every_s,
                exc,
            )
            return False
        return True


SUPERVISORS_KEY = "__supervisors"
"""The events-topic key of the supervisors' heartbeats (``schemas/supervisor.schema.json``)."""

SUPERVISOR_BEAT_S = 30.0
"""How often a supervisor says it is up (seconds); a heartbeat older than :data:`SUPERVISOR_FRESH_S` means it is gone."""

SUPERVISOR_FRESH_S = 2.5 * SUPERVISOR_BEAT_S
"""A supervisor with no heartbeat for this long is not listed (seconds)."""


def live_supervisors(beats: dict[str, dict[str, Any]], now: float) -> list[dict[str, Any]]:
    """The supervisors up at ``now``: each one's last heartbeat, fresh and not ``stopped``, by id.

    >>> beats = {"a": {"supervisor": "a", "state": "up", "at": 100.0}, "b": {"supervisor": "b", "state": "stopped", "at": 100.0}}
    >>> [s["supervisor"] for s in live_supervisors(beats, 150.0)], live_supervisors(beats, 200.0)
    (['a'], [])
    """
    return [b for _, b in sorted(beats.items()) if b.get("state") == "up" and now - float(b.get("at", 0.0)) <= SUPERVISOR_FRESH_S]
