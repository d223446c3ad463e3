"""The stats boards a supervisor reads: one :class:`~streams.monitoring.board.StatsBoard` per planned topology.

They tell whether a claim's worker is alive (fresh snapshots with its pid), whether it holds
its lease (:mod:`streams.runtime.lease`), and what the supervisor's /metrics shows for its own
workers.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from service.control.claims import Claim
from streams.monitoring.board import StatsBoard
from streams.runtime.lease import CLAIM_LIVE_S, LEASE_S


def claim_snapshots(live: Iterable[dict[str, Any]], claim: Claim) -> list[dict[str, Any]]:
    """The snapshots among ``live`` that ``claim``'s process published.

    >>> claim = Claim("wc", 1, "h1", 42, frozenset(), 0.0)
    >>> [s["component"] for s in claim_snapshots([{"worker": "w1", "pid": 42, "component": "split"}, {"worker": "w1", "pid": 7, "component": "split"}], claim)]
    ['split']
    """
    worker = f"w{claim.worker}"
    return [s for s in live if s.get("pid") == claim.pid and s["worker"] == worker]


WORKER_LEASE_S = LEASE_S
"""A worker's lease (seconds, :data:`streams.runtime.lease.LEASE_S`).

A supervisor's contact with the broker lapses on the same bound (:mod:`service.supervisor.contact`)."""

WORKER_CLAIM_LIVE_S = CLAIM_LIVE_S
"""How long a worker's claim holds after its newest stats snapshot (seconds, :data:`streams.runtime.lease.CLAIM_LIVE_S`).

Past it, the worker is silent (:mod:`service.query.reachability`)."""


def holds_lease(snaps: list[dict[str, Any]]) -> bool:
    """Some snapshots, and none says its worker's lease is not held (a worker held without one processes nothing).

    >>> holds_lease([{"gauges": {"lease_held": 1.0}}]), holds_lease([{"gauges": {"lease_held": 0.0}}]), holds_lease([])
    (True, False, False)
    """
    return bool(snaps) and all(s["gauges"].get("lease_held", 1.0) for s in snaps)


class TopologyBoards:
    """Boards of the topologies a supervisor plans (``service.supervisor.daemon``).

    Args: bootstrap: ``bootstrap.servers``.
    Not thread-safe, except :meth:`live_of_workers` (the /metrics thread reads a copy).
    """

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.boards: dict[str, StatsBoard] = {}

    def poll(self, names: Iterable[str]) -> None:
        """Open a board per name, close those of names gone, and read what arrived."""
        wanted = set(names)
        for name in set(self.boards) - wanted:
            self.boards.pop(name).close()
        for name in wanted:
            if name not in self.boards:
                self.boards[name] = StatsBoard(self.bootstrap, name)
            self.boards[name].poll(0)

    def live_of(self, claim: Claim) -> list[dict[str, Any]]:
        """The fresh snapshots (within :data:`CLAIM_LIVE_S`) of ``claim``'s process."""
        board = self.boards.get(claim.topology)
        return [] if board is None else claim_snapshots(board.live(time.time(), fresh_s=CLAIM_LIVE_S), claim)

    def live_of_workers(self, mine: set[tuple[str, str]]) -> list[dict[str, Any]]:
        """The live snapshots of the workers ``(topology, "wN")`` in ``mine``."""
        now = time.time()
        return [s for board in list(self.boards.values()) for s in board.live(now) if (s["topology"], s["worker"]) in mine]

    def close(self) -> None:
        """Close every board."""
        for board in self.boards.values():
            board.close()
        self.boards.clear()
