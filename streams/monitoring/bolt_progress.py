"""Bolt re-executions, counted by cause (as the spout's replays are).

A bolt task reads its input from its group's committed offset. After a clean stop (a kill, a
rebalance, a drain) that is where its last life stopped; after a crash (``kill -9``, a dead
machine) its last life had executed, and flushed the outputs and acks of, records past the
commit: the new life executes them again, and whatever they emitted is emitted twice.

So each task writes its progress, the offset its last flush made safe, to the compacted topic
``squall.T.__progress`` (key ``component:task``) at each flush that moved it. A new life
reads it: records from the committed offset up to that flushed offset are re-executions.
Their cause is ``restart`` when the new life runs in the same place (the same host and
supervisor directory) and ``takeover`` when the task moved (its supervisor died, or a
rebalance after a crash). A crash between a flush and its progress record loses that one
flush's records from the count (an undercount of at most one flush interval).
"""

from __future__ import annotations

import json

from streams.exceptions import DecodeError

REEXECUTION_CAUSES = ("restart", "takeover")


def progress_key(component: str, task: int) -> bytes:
    """``component:task``, the record key of a task's progress."""
    return f"{component}:{task}".encode()


def encode_progress(flushed: int, place: str) -> bytes:
    """A progress record: the offset the last flush made safe, and where the task runs (``schemas/progress.schema.json``)."""
    return json.dumps({"flushed": flushed, "place": place}, separators=(",", ":")).encode()


def decode_progress(raw: bytes | None, *, component: str, topic: str, partition: int, offset: int) -> tuple[int, str]:
    """``(flushed, place)`` from a progress record. Raises DecodeError naming where it was read."""
    try:
        d = json.loads(raw or b"null")
        flushed, place = d["flushed"], d["place"]
        if type(flushed) is not int or flushed < 0 or not isinstance(place, str):
            raise ValueError("flushed must be an offset >= 0 and place a string")
        return flushed, place
    except (ValueError, KeyError, TypeError) as exc:
        raise DecodeError(f"not a progress record: {exc}", component=component, topic=topic, partition=partition, offset=offset) from exc


def reexecution_window(previous: tuple[int, str] | None, committed: int, place: str) -> tuple[int, str]:
    """``(until, cause)``: input offsets below ``until`` (from ``committed`` on) are re-executions, for ``cause``.

    ``previous``: the task's last progress record, if any; ``committed``: where this life
    starts reading; ``place``: where this life runs. ``until`` is -1 when nothing is re-executed.

    >>> reexecution_window((120, "h:/s1"), 100, "h:/s1"), reexecution_window((120, "h:/s1"), 100, "h:/s2")
    ((120, 'restart'), (120, 'takeover'))
    >>> reexecution_window((100, "h:/s1"), 100, "h:/s1"), reexecution_window(None, 0, "h:/s1")
    ((-1, ''), (-1, ''))
    """
    if previous is None or previous[0] <= max(committed, 0):
        return -1, ""
    flushed, was = previous
    return flushed, "restart" if was == place else "takeover"
