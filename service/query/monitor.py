"""``squall monitor``: live rates per component, as ``storm monitor`` prints them.

Every ``interval`` seconds it reads the topology's stats topic to now and prints, per component
(or the one asked for), what its executors emitted, transferred, executed, acked and failed
per second since the last sample. The rates are differences of the components' totals
(:meth:`streams.monitoring.board.StatsBoard.total`), divided by the time between the samples.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

COUNTS = ("emitted", "transferred", "executed", "acked", "failed")


def totals(board: Any, kinds: dict[str, str], component: str | None = None) -> dict[str, dict[str, float]]:
    """``component -> counter -> total`` for :data:`COUNTS`, from a stats board; ``kinds``: component -> spout or bolt."""
    return {c: {k: board.total(kind, k, c) for k in COUNTS} for c, kind in sorted(kinds.items()) if component in (None, c)}


def rate_lines(before: dict[str, dict[str, float]], after: dict[str, dict[str, float]], seconds: float, clock: str) -> Iterable[str]:
    """One line per component: the per-second rates between two :func:`totals` ``seconds`` apart."""
    for c, now in after.items():
        was = before.get(c, {})
        rates = {k: max(0.0, now[k] - was.get(k, now[k])) / max(seconds, 1e-9) for k in COUNTS}
        yield f"{clock}  {c:<16} " + "  ".join(f"{k} {rates[k]:,.1f}/s" for k in COUNTS)
