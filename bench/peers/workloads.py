"""The two workloads' logic, shared by every contender so they do the same job.

Input records are JSON ``{"v": <line>, "ts": <produce time, epoch seconds>}`` for the peers
(the timestamp travels to the output for end-to-end latency); Squall reads the raw line.
"""

from __future__ import annotations

import re
from typing import Any

WORD = re.compile(r"[a-z']+")


def words(line: str) -> list[str]:
    return WORD.findall(line.lower())


def flight(line: str) -> tuple[str, int] | None:
    from examples.flights import parse

    return parse(line)


def expected_wordcount(lines: list[bytes]) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in lines:
        for w in words(line.decode("utf-8", "replace")):
            out[w] = out.get(w, 0) + 1
    return out


def expected_flights(lines: list[bytes]) -> dict[str, Any]:
    out: dict[str, list[int]] = {}
    for line in lines:
        parsed = flight(line.decode("utf-8", "replace"))
        if parsed is not None:
            slot = out.setdefault(parsed[0], [0, 0])
            slot[0] += 1
            slot[1] += parsed[1]
    return out


HOUR_S = 3600.0
LAG_S = 2 * HOUR_S
"""The windows workload: 1-hour windows, 2 hours of disorder allowed (examples/flights_windows.py)."""


def scheduled_flight(line: str) -> tuple[str, float] | None:
    from examples.flights_windows import scheduled

    try:
        return scheduled(line)
    except (ValueError, IndexError):
        return None


def hour_of(ts: float) -> str:
    from examples.flights_windows import hour_of as hour

    return hour(ts)


def expected_windows(lines: list[bytes]) -> dict[str, int]:
    """Flights per ``"<carrier> <hour>"``: what the windows plus the late flights add up to."""
    from examples.flights_windows import direct_counts

    return dict(direct_counts(line.decode("utf-8", "replace") for line in lines))
