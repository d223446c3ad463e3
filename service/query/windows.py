"""Storm UI's stat windows (10 minutes, 3 hours, 1 day, all time) from cumulative totals sampled over time.

Storm's executors keep rolling counters per window. Squall's executors publish cumulative
totals (the stats topic); the difference between the totals now and the totals one window ago
is the window's count. :class:`StatWindows` keeps the past totals it was shown, thinned as
they age so that a day of history costs a few hundred samples:

* younger than 10 minutes: one sample per 5 s;
* younger than 3 hours: one per minute;
* younger than a day: one per 10 minutes;
* older: only the newest of them (the day window's baseline).

A window longer than the history seen so far (the supervisor started an hour ago, say) counts
from the oldest sample and says since when (``since``), as Storm's windows do after a restart.
Latencies are means over the window: the difference of their sums over the difference of their
counts.

>>> w = StatWindows()
>>> w.record(0.0, {"split": {"emitted": 100.0}})
>>> w.record(700.0, {"split": {"emitted": 1300.0}})
>>> ten = w.window(600.0, 700.0, {"split": {"emitted": 1300.0}})
>>> ten.components["split"]["emitted"], ten.since, ten.partial
(1200.0, 0.0, False)
>>> w.window(10800.0, 700.0, {"split": {"emitted": 1300.0}}).partial
True
"""

from __future__ import annotations

from dataclasses import dataclass

WINDOWS: tuple[tuple[str, str, float | None], ...] = (
    ("600", "10m 0s", 600.0),
    ("10800", "3h 0m 0s", 10800.0),
    ("86400", "1d 0h 0m 0s", 86400.0),
    (":all-time", "All time", None),
)
"""Storm's windows: ``(window parameter, windowPretty, seconds or None for all time)``."""

SPACING: tuple[tuple[float, float], ...] = ((600.0, 5.0), (10800.0, 60.0), (86400.0, 600.0))
"""``(age below, least spacing)`` of the samples kept (seconds)."""

Totals = dict[str, dict[str, float]]
"""``component -> {counter: cumulative value}`` (counts, and latency ``*_sum_s`` / ``*_count``)."""


@dataclass(frozen=True)
class Window:
    """One window's counts: ``components`` (``component -> {counter: delta}``), from ``since`` (wall seconds; 0 for all time) to now.

    ``partial``: the history is shorter than the window (it counts from ``since``).
    """

    components: Totals
    since: float
    partial: bool


class StatWindows:
    """Past cumulative totals, thinned with age (module docstring). Not thread-safe: its owner locks."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, Totals]] = []
        """``(wall seconds, totals)``, oldest first."""

    def record(self, now: float, totals: Totals) -> None:
        """Keep ``totals`` as of ``now`` (wall seconds) if the last sample is at least 5 s old, then thin the old ones."""
        if self.samples and now - self.samples[-1][0] < SPACING[0][1]:
            return
        self.samples.append((now, {c: dict(v) for c, v in totals.items()}))
        self._thin(now)

    def _thin(self, now: float) -> None:
        kept: list[tuple[float, Totals]] = []
        for at, totals in self.samples:
            age = now - at
            spacing = next((s for below, s in SPACING if age < below), None)
            if spacing is None:  # older than a day: only the newest such sample stays
                kept = [(at, totals)]
            elif not kept or at - kept[-1][0] >= spacing or now - kept[-1][0] > SPACING[-1][0]:
                kept.append((at, totals))
        self.samples = kept

    def window(self, seconds: float | None, now: float, current: Totals) -> Window:
        """The counts of the last ``seconds`` (None: all time) as of ``now``, ``current`` being the totals now."""
        if seconds is None:
            return Window({c: dict(v) for c, v in current.items()}, 0.0, False)
        start = now - seconds
        base = next((s for s in reversed(self.samples) if s[0] <= start), None)
        partial = base is None
        if base is None:
            base = self.samples[0] if self.samples else (now, current)
        at, before = base
        out: Totals = {}
        for comp, values in current.items():
            old = before.get(comp, {})
            out[comp] = {k: max(0.0, v - old.get(k, 0.0)) for k, v in values.items()}
        return Window(out, at, partial)


def mean_s(counts: dict[str, float], name: str) -> float | None:
    """The mean latency ``name`` (``execute``, ``process``, ``complete``) over a window's counts, seconds (None when nothing was timed).

    >>> mean_s({"complete_sum_s": 3.0, "complete_count": 6.0}, "complete"), mean_s({}, "execute")
    (0.5, None)
    """
    n = counts.get(f"{name}_count", 0.0)
    return counts.get(f"{name}_sum_s", 0.0) / n if n > 0 else None


def window_row(components: Totals, spouts: list[str]) -> dict[str, float | None]:
    """A topology's row of one window (Storm's ``topologyStats``), from the window's counts per component.

    ``emitted`` and ``transferred`` over every component; ``acked``, ``failed`` and ``complete_s``
    (the mean complete latency, seconds, None when nothing was timed) over the spouts.

    >>> window_row({"lines": {"emitted": 5.0, "acked": 4.0, "complete_sum_s": 2.0, "complete_count": 4.0}, "split": {"emitted": 9.0}}, ["lines"])
    {'emitted': 14.0, 'transferred': 0.0, 'acked': 4.0, 'failed': 0.0, 'complete_s': 0.5}
    """
    mine = [components.get(c, {}) for c in spouts]
    timed = {"complete_sum_s": sum(v.get("complete_sum_s", 0.0) for v in mine), "complete_count": sum(v.get("complete_count", 0.0) for v in mine)}
    return {
        "emitted": sum(v.get("emitted", 0.0) for v in components.values()),
        "transferred": sum(v.get("transferred", 0.0) for v in components.values()),
        "acked": sum(v.get("acked", 0.0) for v in mine),
        "failed": sum(v.get("failed", 0.0) for v in mine),
        "complete_s": mean_s(timed, "complete"),
    }
