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
