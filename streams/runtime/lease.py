"""A worker's lease on its tasks, and the one timeout design that keeps a task from running twice (pure, injected clock).

Under ``squall serve`` supervisors coordinate only through Kafka (:mod:`service.control.claims`): a
worker's claim on its tasks holds for the other supervisors while its executors' stats
snapshots are fresh. A worker cut off from the broker keeps running, so without a lease it
would come back after the cut as a zombie beside its replacement (Storm avoids this with
worker heartbeats its supervisor must renew; Kafka Streams with generations and
transactional ids).

The lease: a worker holds its tasks while the broker confirmed one of its stats snapshots
less than :data:`LEASE_S` ago (measured from the snapshot's own ``time``, on the worker's
clock). When it lapses, every executor stops at the top of its next round (no consume, emit,
acker op or offset commit: :meth:`streams.runtime.executor.Executor._maybe_stats`) and keeps
only publishing snapshots. A confirmed snapshot does not give the lease back by itself:
the worker first reads the supervisors' events to their end (:mod:`service.worker.claim_watch`);
if another process claimed any of its tasks meanwhile, the worker is *fenced* and exits
without committing anything; otherwise it goes on where it stopped.

The timeline of a cut, ``t`` = the ``time`` of the worker's last confirmed snapshot:

===================================  ==========================================================
``t + LEASE_S`` (3 s)                the lease lapses: the worker's executors stop
``t + CLAIM_LIVE_S`` (5 s)           the other supervisors see its claim lapse (its newest
                                     snapshot is older than that, on *their* clocks)
session timeout (6 s) + settle (2 s) its slot moves and the new owner may start a replacement,
                                     only once the claim has lapsed (:mod:`service.control.slots`)
===================================  ==========================================================

So each step waits for the one before it: ``LEASE_S + MAX_CLOCK_SKEW_S + one executor round
< CLAIM_LIVE_S`` (asserted here for a round of :data:`PAUSED_SNAPSHOT_S`), and a supervisor
starts a replacement only once the claim has lapsed (:meth:`service.control.claims.ClaimBook.blocking`),
whatever the session timeout. A round of user code longer than the margin (1 s) can still
overlap; :mod:`service.worker.claim_watch` fences it when it comes round. The stats interval
must leave a lapse impossible in normal running (``squall.stats.interval.secs`` at most
``LEASE_S / 2``); :func:`check_timeouts` says so at start-up.

>>> lease = WorkerLease(now=100.0)
>>> lease.held, lease.check(102.0), lease.held
(True, None, True)
>>> lease.check(103.5), lease.held
('lapsed', False)
>>> lease.renew(103.6); lease.check(103.7), lease.held     # confirmed again, but not verified
(None, False)
>>> lease.verified(103.8), lease.held
('regained', True)
>>> lease.fence("split:1 claimed by w2 (pid 7) on h2"), lease.held, lease.state
('fenced', False, 'fenced')
"""

from __future__ import annotations

import threading

from streams.exceptions import ConfigError

LEASE_S = 3.0
"""A worker stops processing when the broker confirmed none of its stats snapshots for this long (seconds)."""

CLAIM_LIVE_S = 5.0
"""The other supervisors count a worker's claim alive while its newest snapshot is younger than this (seconds, on their clocks)."""

MAX_CLOCK_SKEW_S = 1.0
"""The clock difference between hosts the design tolerates (seconds; NTP keeps hosts within milliseconds)."""

PURGE_AFTER_S = 5.0
"""A bolt blocked flushing its outputs purges what is still unconfirmed once its worker's lease
has been lapsed this long (seconds; :meth:`WorkerLease.purge_due`), or at once when fenced.

Not at the lapse itself: on Apache Kafka a broker that is busy or electing leaders stalls
every ``acks=all`` write for a few seconds, the lease lapses and comes back within a second
or within the election, and purging then failed and replayed every tree in flight, which
loaded the brokers more and lapsed the lease again (a 30 s cut of a leader's host: 14 lapses,
up to 2,875 records purged each). A zombie's late writes are dropped by their readers
anyway (:mod:`streams.runtime.fencing`); the purge only keeps a worker cut off for long from
sending its queue when it comes back."""

PAUSED_SNAPSHOT_S = 0.5
"""How often a paused executor publishes a snapshot, to learn that the broker is back (seconds)."""

HELD = "held"
LAPSED = "lapsed"
FENCED = "fenced"


def check_timeouts(stats_interval_s: float, where: str) -> None:
    """Raise ConfigError (naming ``where``) if ``squall.stats.interval.secs`` (``stats_interval_s``, seconds) could let a busy worker's lease lapse.

    >>> check_timeouts(1.0, "lines")
    >>> check_timeouts(2.0, "lines")
    Traceback (most recent call last):
    ...
    streams.exceptions.ConfigError: [lines] squall.stats.interval.secs is 2 s: at most 1.5 s (half the worker lease of 3 s)
    """
    if stats_interval_s > LEASE_S / 2:
        raise ConfigError(f"[{where}] squall.stats.interval.secs is {stats_interval_s:g} s: at most {LEASE_S / 2:g} s (half the worker lease of {LEASE_S:g} s)")


assert LEASE_S + MAX_CLOCK_SKEW_S + PAUSED_SNAPSHOT_S < CLAIM_LIVE_S, "a lease must lapse before the claim does"


class WorkerLease:
    """One worker's lease (see the module docstring); shared by its executors.

    States: ``held`` -> ``lapsed`` (no confirmed snapshot for :data:`LEASE_S`) -> ``held``
    again once renewed *and* verified, or ``fenced`` (for good) when another process claimed
    its tasks. :attr:`held` is a plain attribute, read by every executor once a round.

    Args: now: the worker's start (wall-clock seconds): the lease starts held from there;
    lease_s: the lease's length (seconds).
    Thread safety: :meth:`renew` from any executor's thread (delivery callbacks); the other
    methods from the worker's main thread and its claim watch.
    """

    def __init__(self, now: float, lease_s: float = LEASE_S) -> None:
        self.lease_s = lease_s
        self.renewed_at = now
        """The ``time`` of the newest snapshot the broker confirmed (wall-clock seconds)."""
        self.state = HELD
        self.held = True
        """Whether executors may process (state ``held``)."""
        self.lapsed_at: float | None = None
        """When the lease last lapsed (wall-clock seconds), while it is lapsed."""
        self.lapses = 0
        """How many times it lapsed."""
        self.fenced_by = ""
        """Why it was fenced (which claim), once fenced."""
        self._lock = threading.Lock()

    def renew(self, at: float) -> None:
        """The broker confirmed a snapshot taken at ``at`` (wall-clock seconds)."""
        with self._lock:
            if at > self.renewed_at:
                self.renewed_at = at

    def check(self, now: float) -> str | None:
        """Lapse the lease if nothing was confirmed for ``lease_s`` before ``now``; returns ``"lapsed"`` when it just did, else None."""
        with self._lock:
            if self.state == HELD and now - self.renewed_at > self.lease_s:
                self.state, self.held, self.lapsed_at = LAPSED, False, now
                self.lapses += 1
                return LAPSED
            return None

    def renewed_since_lapse(self) -> bool:
        """Lapsed, and a snapshot taken after the lapse was confirmed since: time to verify the claims."""
        with self._lock:
            return self.state == LAPSED and self.lapsed_at is not None and self.renewed_at > self.lapsed_at

    def verified(self, now: float) -> str | None:
        """The claims were read to their end after a renewal and no other process claims these tasks: held again.

        Returns ``"regained"`` if that ended a lapse, else None (not lapsed, fenced, or not
        renewed within ``lease_s`` of ``now``).
        """
        with self._lock:
            if self.state != LAPSED or now - self.renewed_at > self.lease_s or self.lapsed_at is None or self.renewed_at <= self.lapsed_at:
                return None
            self.state, self.held, self.lapsed_at = HELD, True, None
            return "regained"

    def fence(self, why: str) -> str:
        """Another process claimed these tasks: the lease is gone for good. Returns ``"fenced"``."""
        with self._lock:
            self.state, self.held = FENCED, False
            self.fenced_by = self.fenced_by or why
            return FENCED

    def lapsed_for(self, now: float) -> float:
        """How long the lease has been lapsed at ``now`` (seconds; 0 if held)."""
        return 0.0 if self.lapsed_at is None else max(0.0, now - self.lapsed_at)

    def purge_due(self, now: float) -> bool:
        """Whether a blocked flush should purge now: fenced, or lapsed for :data:`PURGE_AFTER_S` at ``now`` (wall-clock seconds).

        >>> lease = WorkerLease(now=100.0); _ = lease.check(103.5)
        >>> lease.purge_due(106.0), lease.purge_due(108.5)
        (False, True)
        """
        return self.state == FENCED or self.lapsed_for(now) >= PURGE_AFTER_S
