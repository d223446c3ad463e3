"""Which workers went silent, and which supervisors are unreachable, seen from any host (issue 52).

A worker cut off from the broker stops on its lapsed lease (:mod:`streams.runtime.lease`), but it
cannot say so: its stats, where its lease pauses are counted, no longer reach the broker, and
its supervisor cannot write an event either. ``squall status`` on a healthy host used to show
normal numbers for the whole cut.

What every host does see is the silence: a worker whose claim is open (it was started and no
exit was seen) and whose newest stats snapshot is older than
:data:`~service.control.boards.WORKER_CLAIM_LIVE_S` (5 s) has not reached the broker for longer than
its lease (3 s): its executors are paused, and the other supervisors may replace it. A
supervisor all of whose open claims are silent is *unreachable*. Both show within the claim's
5 s of the worker's last confirmed snapshot, 2 s after its lease lapsed.

>>> started = {"event": "started", "topology": "wc", "supervisor": "h1", "pid": 7, "worker": 2, "tasks": [["count", 0]], "at": 100.0}
>>> snap = {"worker": "w2", "pid": 7, "time": 150.0, "final": False}
>>> book = ClaimBook.of([started])
>>> [w["silent_s"] for w in silent_workers("wc", book, [snap], now=152.0)]
[]
>>> silent = silent_workers("wc", book, [snap], now=158.5); silent
[{'worker': 'w2', 'supervisor': 'h1', 'pid': 7, 'silent_s': 8.5}]
>>> unreachable_supervisors("wc", silent, book)
[{'supervisor': 'h1', 'workers': ['w2'], 'silent_s': 8.5}]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from service.control.boards import WORKER_CLAIM_LIVE_S
from service.control.claims import ClaimBook


def silent_workers(name: str, book: ClaimBook, snaps: Iterable[dict[str, Any]], now: float) -> list[dict[str, Any]]:
    """The open claims of topology ``name`` whose process published no stats for more than :data:`WORKER_CLAIM_LIVE_S` (wall-clock ``now``).

    ``book``: the claims of ``squall.__events`` (:meth:`ClaimBook.of`); ``snaps``: the newest snapshot of every executor (a
    board's ``latest``). A claim younger than its start-up grace, or whose process said its
    final snapshot (it is stopping), is not silent. Each: ``worker`` (``w2``), ``supervisor``,
    ``pid`` and ``silent_s`` (seconds since its newest snapshot, or since its start without
    one), oldest silence first.
    """
    newest: dict[tuple[str, int], dict[str, Any]] = {}
    for s in snaps:
        key = (str(s.get("worker")), int(s.get("pid") or 0))
        if key not in newest or float(s.get("time", 0.0)) > float(newest[key].get("time", 0.0)):
            newest[key] = s
    out = []
    for claim in book.open.values():
        if claim.topology != name or now - claim.started_at < book.startup_grace_s:
            continue
        last = newest.get((f"w{claim.worker}", claim.pid))
        if last is not None and last.get("final"):
            continue
        since = float(last.get("time", claim.started_at)) if last is not None else claim.started_at
        if now - since > WORKER_CLAIM_LIVE_S:
            out.append({"worker": f"w{claim.worker}", "supervisor": claim.supervisor, "pid": claim.pid, "silent_s": round(now - since, 1)})
    return sorted(out, key=lambda w: -float(w["silent_s"]))


def unreachable_supervisors(name: str, silent: list[dict[str, Any]], book: ClaimBook) -> list[dict[str, Any]]:
    """The supervisors all of whose open claims of topology ``name`` in ``book`` are among ``silent``.

    Each: ``supervisor``, its ``workers``, the shortest ``silent_s``.
    """
    quiet = {(w["supervisor"], w["pid"]) for w in silent}
    out = []
    for sup in sorted({w["supervisor"] for w in silent}):
        claims = [c for c in book.open.values() if c.supervisor == sup and c.topology == name]
        if claims and all((c.supervisor, c.pid) in quiet for c in claims):
            mine = [w for w in silent if w["supervisor"] == sup]
            out.append({"supervisor": sup, "workers": sorted(w["worker"] for w in mine), "silent_s": min(float(w["silent_s"]) for w in mine)})
    return out
