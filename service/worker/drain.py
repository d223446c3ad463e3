"""A worker's SIGTERM drain (Storm's graceful shutdown, done so nothing is replayed).

1. Spouts stop emitting (:meth:`streams.runtime.spout.SpoutExecutor.drain`).
2. Every executor keeps running while trees are in flight: the local spouts' own trees,
   and, for a worker without spouts, the trees of spouts that are winding down elsewhere
   (draining, or deactivated as ``kill`` does before its wait), read from the topology's
   stats topic once that is read to its end, because its bolts and ackers may be needed
   to finish them. A spout elsewhere that is active and not draining (a supervisor
   stopping alone, its topologies moving to others) is not waited for.
3. Once nothing else is waited for, a transactional topology's bolts finish the batches they
   hold up to the worker's cutoff txid and leave later ones to their next lives
   (:mod:`streams.runtime.handoff`), so no batch replays.
4. Then every executor stops: spouts commit, bolts clean up, flush and commit, ackers
   flush their changelog and commit.

Bounded by ``squall.shutdown.timeout.secs``; what is still in flight then is replayed.

>>> snap = {"kind": "spout", "final": False, "time": 99.0, "gauges": {"draining": 1, "pending": 3}}
>>> draining_elsewhere([snap], now=100.0), draining_elsewhere([{**snap, "final": True}], now=100.0)
(True, False)
>>> draining_elsewhere([{**snap, "gauges": {"active": 0, "pending": 3}}], now=100.0)  # killed: deactivated first
True
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

FRESH_S = 5.0
"""A stats snapshot older than this (seconds) is from an executor that is gone."""


def draining_elsewhere(snapshots: Iterable[dict[str, Any]], now: float) -> bool:
    """True if a live spout executor is draining or deactivated with trees still in flight."""
    for s in snapshots:
        if s.get("kind") != "spout" or s.get("final") or now - float(s.get("time", 0)) > FRESH_S:
            continue
        gauges = s.get("gauges", {})
        winding_down = bool(gauges.get("draining")) or gauges.get("active", 1.0) == 0
        if winding_down and gauges.get("pending", 0) > 0:
            return True
    return False
