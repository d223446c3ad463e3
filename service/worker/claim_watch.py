"""A worker's watch over the claims on its tasks: it fences itself when another process claims them, and gives a lapsed lease back only after checking.

Under ``squall serve`` each worker tails ``squall.__events`` (the supervisors' ``started`` /
``stopped`` / ``crashed`` records, :mod:`service.control.claims`) on a daemon thread:

1. It finds its own ``started`` record (by the claim id its supervisor gave it).
2. A ``started`` record after it, from another process, that claims any of its tasks means
   it was replaced (its claim lapsed for the others while it was cut off, or stopped):
   the lease is *fenced* (:meth:`streams.runtime.lease.WorkerLease.fence`) and the worker
   exits without committing (:data:`FENCED_EXIT_CODE`).
3. After a lapse (:mod:`streams.runtime.lease`), once the broker confirms a new snapshot,
   it reads the events to a high watermark asked for *after* that confirmation; if step 2
   did not fire on the way, the lease is held again and the executors go on.

Events before the worker's own claim are older claims it superseded, so they never fence it.

>>> claim = {"topology": "wc", "event": "started", "supervisor": "h2", "worker": 1, "pid": 7, "tasks": [["split", 1]], "claim": "c2"}
>>> Me("wc", "c1", 42, {("split", 0), ("split", 1)}).foreign(claim)
'split:1 claimed by w1 (pid 7) on h2'
>>> Me("wc", "c1", 42, {("split", 0)}).foreign(claim) is None
True
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from service.control.log import ControlTopics, EventLog
from service.process.spawn import CLAIM_ENV
from streams.runtime.lease import WorkerLease

log = logging.getLogger("squall.worker")

FENCED_EXIT_CODE = 4
"""What a worker exits with when another process claimed its tasks (its supervisor records ``fenced``, not a crash)."""

LEASE_EXIT_CODE = 5
"""What a worker exits with when it is stopped while its lease is lapsed: it cannot drain or commit."""


@dataclass(frozen=True)
class Me:
    """Who a worker is, in the events: its topology, the claim id of its ``started`` record, its pid (for logs) and its tasks ``(component, task)``."""

    topology: str
    claim: str
    pid: int
    tasks: set[tuple[str, int]]

    def own(self, event: dict[str, Any]) -> bool:
        """Whether ``event`` is this worker's own ``started`` record."""
        if event.get("event") != "started" or event.get("topology") != self.topology:
            return False
        return bool(self.claim) and event.get("claim") == self.claim

    def foreign(self, event: dict[str, Any]) -> str | None:
        """Why ``event`` (a record of ``squall.__events``) takes tasks of this worker, else None."""
        if event.get("event") != "started" or event.get("topology") != self.topology or self.own(event):
            return None
        theirs = {(str(c), int(t)) for c, t in event.get("tasks", [])}
        taken = sorted(self.tasks & theirs)
        if not taken:
            return None
        shown = ", ".join(f"{c}:{t}" for c, t in taken[:3]) + (f" and {len(taken) - 3} more" if len(taken) > 3 else "")
        return f"{shown} claimed by w{event.get('worker')} (pid {event.get('pid')}) on {event.get('supervisor')}"


class ClaimWatch:
    """Tails the events for one worker (module docstring).

    Args:
      bootstrap: ``bootstrap.servers``.
      names: the control topics.
      me: this worker.
      lease: the worker's lease, fenced or verified here.
      overrides: consumer settings.
      clock: wall-clock seconds.
    Thread safety: runs its own daemon thread; :meth:`stop` from any thread.
    """

    def __init__(
        self,
        bootstrap: str,
        names: ControlTopics,
        me: Me,
        lease: WorkerLease,
        overrides: dict[str, Any] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.me = me
        self.lease = lease
        self.clock = clock
        self.events = EventLog(bootstrap, names, overrides)
        self.seen_own = False
        """Whether this worker's own ``started`` record was read (later claims on its tasks fence it)."""
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"claims-{me.topology}", daemon=True)

    def start(self) -> None:
        """Start tailing in a daemon thread."""
        self.thread.start()

    def stop(self) -> None:
        """Stop tailing (the thread closes its consumer)."""
        self._stop.set()

    def apply(self, events: list[dict[str, Any]]) -> str | None:
        """Read ``events`` in order; fence the lease on the first foreign claim after this worker's own. Returns why, if fenced."""
        for event in events:
            if self.me.own(event):
                self.seen_own = True
                continue
            why = self.me.foreign(event) if self.seen_own else None
            if why is not None:
                self.lease.fence(why)
                return why
        return None

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.apply(self.events.poll(0.2))
                if self.lease.renewed_since_lapse():
                    self._verify()
        finally:
            self.events.close()

    def _verify(self) -> None:
        """Read to a high watermark asked for now; then the lease is held again, unless a claim fenced it on the way."""
        tp = TopicPartition(self.events.topic, 0)
        try:
            _, high = self.events.consumer.get_watermark_offsets(tp, timeout=5.0, cached=False)
        except KafkaException as exc:
            log.warning("[%s] worker pid %d: cannot ask %s's end yet: %s", self.me.topology, self.me.pid, self.events.topic, exc)
            return
        deadline = time.monotonic() + 10.0
        while self.events.position < high and time.monotonic() < deadline and not self._stop.is_set():
            if self.apply(self.events.poll(0.2)) is not None:
                return
        if self.events.position >= high and self.lease.verified(self.clock()) is not None:
            log.warning("[%s] worker pid %d: lease regained: no other process claimed its tasks (events read to %d)", self.me.topology, self.me.pid, high)


def me_from_env(topology: str, tasks: set[tuple[str, int]]) -> Me:
    """This worker, with its claim id from :data:`~service.process.spawn.CLAIM_ENV` (empty if unset: then it never finds its own claim, and never fences)."""
    return Me(topology, os.environ.get(CLAIM_ENV, ""), os.getpid(), tasks)
