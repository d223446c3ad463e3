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

The record also names the life that wrote it (its claim epoch) and the input offset whose
commit the broker last confirmed to it: a new life that finds the committed offset moved
back by a replaced owner's late commit starts from that one (:mod:`streams.wire.commits`).

A transactional bolt's task that drained while its topology kept running also records its
hand-off, ``[T, L]``: from its commit up to offset ``L`` it executed the tuples of batches up
to txid ``T`` only, and the next life executes the rest (:mod:`streams.runtime.handoff`).
"""

from __future__ import annotations

import json
from typing import NamedTuple

from streams.exceptions import DecodeError

REEXECUTION_CAUSES = ("restart", "takeover")


def progress_key(component: str, task: int) -> bytes:
    """``component:task``, the record key of a task's progress."""
    return f"{component}:{task}".encode()


class Progress(NamedTuple):
    """A task's last progress record.

    ``flushed``: the input offset its last flush made safe; ``place``: where it ran;
    ``epoch``: the life that wrote it (0: unknown); ``committed``: the input offset whose
    commit the broker last confirmed to that life (-1: none); ``handoff``: ``(T, L)`` of a
    drain that handed its batches on (None: none).
    """

    flushed: int
    place: str
    epoch: int = 0
    committed: int = -1
    handoff: tuple[int, int] | None = None


def encode_progress(flushed: int, place: str, epoch: int = 0, committed: int = -1, handoff: tuple[int, int] | None = None) -> bytes:
    """A progress record (``schemas/progress.schema.json``): see :class:`Progress`.

    >>> raw = encode_progress(10, "h:/s", 3, 9, (41, 12)); raw
    b'{"flushed":10,"place":"h:/s","epoch":3,"committed":9,"handoff":[41,12]}'
    >>> decode_progress(raw, component="c", topic="t", partition=0, offset=0).handoff
    (41, 12)
    """
    d: dict[str, object] = {"flushed": flushed, "place": place, "epoch": epoch, "committed": committed}
    if handoff is not None:
        d["handoff"] = list(handoff)
    return json.dumps(d, separators=(",", ":")).encode()


def decode_progress(raw: bytes | None, *, component: str, topic: str, partition: int, offset: int) -> Progress:
    """A :class:`Progress` from a record; raises DecodeError naming where it was read.

    A record without ``epoch`` and ``committed`` (written before them) reads as unknown.
    """
    try:
        d = json.loads(raw or b"null")
        flushed, place, epoch, committed = d["flushed"], d["place"], d.get("epoch", 0), d.get("committed", -1)
        if type(flushed) is not int or flushed < 0 or not isinstance(place, str):
            raise ValueError("flushed must be an offset >= 0 and place a string")
        if type(epoch) is not int or epoch < 0 or type(committed) is not int or committed < -1:
            raise ValueError("epoch must be an integer >= 0 and committed an offset >= -1")
        handoff = d.get("handoff")
        if handoff is not None:
            if not isinstance(handoff, list) or len(handoff) != 2 or any(type(v) is not int for v in handoff) or handoff[0] < -1 or handoff[1] < 0:
                raise ValueError("handoff must be [txid >= -1, offset >= 0]")
            return Progress(flushed, place, epoch, committed, (handoff[0], handoff[1]))
        return Progress(flushed, place, epoch, committed)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DecodeError(f"not a progress record: {exc}", component=component, topic=topic, partition=partition, offset=offset) from exc


def reexecution_window(previous: Progress | tuple[int, str] | None, committed: int, place: str) -> tuple[int, str]:
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
    flushed, was = previous[0], previous[1]
    return flushed, "restart" if was == place else "takeover"
