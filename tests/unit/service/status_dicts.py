"""A ``squall status --json`` dict with only what every status has, for tests of how status says one thing."""

from __future__ import annotations

from typing import Any


def bare_status(name: str = "wc", **over: Any) -> dict[str, Any]:
    """A quiet topology's status (no components, outputs or errors), with ``over`` on top."""
    return {
        "name": name,
        "status": "ACTIVE",
        "uptime_s": 5.0,
        "workers": 0,
        "pending": 0,
        "complete_latency_p50_s": None,
        "complete_latency_p99_s": None,
        "trees_acked": 0,
        "trees_failed": 0,
        "replays": {"fail": 0, "timeout": 0, "restart": 0},
        "components": {},
        "outputs": [],
        "component_errors": [],
        "errors": [],
        **over,
    }
