"""A supervisor's contact with the broker: the lease its ``/readyz`` answers by (issue 52).

A supervisor host cut off from the broker kept answering ``/readyz`` 200 (``ok: 3 workers``)
for the whole cut, while its workers had stopped on their lapsed leases
(:mod:`streams.runtime.lease`) and the other supervisors were starting their replacements. A
load balancer or an operator reading it saw nothing wrong.

So a thread asks the broker for the cluster's metadata every :data:`PROBE_S` (one Metadata
request on the supervisor's control producer; it answers only over a working connection),
and the supervisor holds its *contact lease* while the last answer came less than
:data:`~service.control.boards.WORKER_LEASE_S` (3 s) ago: the workers' own lease, so the supervisor turns
unready when its workers stop, and ready again with the first answer after the cut.

>>> c = BrokerContact(lambda: None, now=100.0)
>>> c.holds(102.9), round(c.silent_for(102.9), 1)
(True, 2.9)
>>> c.holds(103.1)
False
>>> c.answered(103.5); c.holds(103.6), c.long_gap_ended
(True, None)
>>> c.answered(110.0); c.long_gap_ended  # 6.5 s of silence: longer than the session
110.0
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from service.control.boards import WORKER_LEASE_S

log = logging.getLogger("squall.supervisor")

PROBE_S = 0.5
"""How often the broker is asked (seconds)."""

PROBE_TIMEOUT_S = 2.0
"""How long one probe waits for its answer (seconds)."""


class BrokerContact:
    """The last time the broker answered this supervisor, and the lease that follows from it.

    Args:
      probe: one round trip to the broker; raises when it gets no answer (e.g. a producer's
        ``list_topics`` with :data:`PROBE_TIMEOUT_S`).
      now: monotonic seconds at the start (the contact counts from then: a supervisor that
        just connected is in contact).
      lease_s: how long without an answer lapses the lease (seconds).
    Thread-safe: the probe thread writes, the HTTP thread and the rounds read.
    """

    def __init__(self, probe: Callable[[], object], now: float, lease_s: float = WORKER_LEASE_S, long_gap_s: float = 6.0) -> None:
        self.probe = probe
        self.lease_s = lease_s
        self.long_gap_s = long_gap_s
        self.last_answer = now
        """Monotonic seconds of the last answer."""
        self.long_gap_ended: float | None = None
        """When the last silence longer than ``long_gap_s`` (the supervisors' session) ended: its slots may have moved meanwhile."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="broker-contact", daemon=True)

    def answered(self, at: float) -> None:
        """The broker answered at monotonic ``at``."""
        with self._lock:
            if at - self.last_answer > self.long_gap_s:
                self.long_gap_ended = at
            self.last_answer = max(self.last_answer, at)

    def silent_for(self, now: float) -> float:
        """Seconds since the broker last answered."""
        with self._lock:
            return max(0.0, now - self.last_answer)

    def holds(self, now: float) -> bool:
        """Whether the broker answered within the lease (any thread: a round, /readyz, a scrape)."""
        return self.silent_for(now) <= self.lease_s

    def start(self) -> None:
        """Probe in a daemon thread until :meth:`stop`."""
        self._thread.start()

    def stop(self) -> None:
        """Stop probing (returns at once; the thread ends after its probe)."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.probe()
                self.answered(time.monotonic())
            except Exception as exc:  # no answer: the lease runs out on its own
                log.debug("broker probe failed: %s", exc)
            self._stop.wait(max(0.0, PROBE_S - (time.monotonic() - started)))
