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

And its reader's **fence**: the sending tasks' epochs it had seen in its partition, each with
the offset where it first saw it (:meth:`streams.runtime.fencing.EpochFence.entries`), so that
a new life refuses a replaced sender's late record even when it starts past the marker.

**Keys name the life** (``component:task:epoch``): a replaced owner's progress record that
lands late (seen 53 s after a cut) would otherwise be the key's newest value, and compaction
would keep it over the new life's. The reader takes each task's newest epoch
(:func:`newest_lives`); a life's first record deletes its older lives' keys (tombstones).
Keys without an epoch (written before it) are read as the epoch in the value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import NamedTuple

from streams.exceptions import DecodeError

REEXECUTION_CAUSES = ("restart", "takeover")


def progress_key(component: str, task: int, epoch: int | None = None) -> bytes:
    """``component:task:epoch``, the record key of a life's progress (``component:task`` without ``epoch``: the old form).

    >>> progress_key("count", 3, 1764232345123), parse_progress_key(b"count:3:1764232345123", "count"), parse_progress_key(b"count:3", "count")
    (b'count:3:1764232345123', (3, 1764232345123), (3, None))
    """
    return f"{component}:{task}".encode() if epoch is None else f"{component}:{task}:{epoch}".encode()


def parse_progress_key(key: bytes, component: str) -> tuple[int, int | None] | None:
    """``(task, epoch)`` of a progress key of ``component`` (epoch None: the old form); None for another component's or a malformed key."""
    prefix = f"{component}:".encode()
    if not key.startswith(prefix):
        return None
    parts = key[len(prefix) :].split(b":")
    if not 1 <= len(parts) <= 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1]) if len(parts) == 2 else None


def newest_lives(
    records: Iterable[tuple[bytes, bytes | None]], component: str, decode: Callable[[bytes | None], Progress]
) -> tuple[dict[int, Progress], list[bytes]]:
    """Each task's progress from ``records`` (``(key, value)`` in log order): the newest life's, and the keys of older lives.

    A life's record is taken over an older life's whatever their order in the log (a
    replaced owner's record that landed late is not taken); within one life, the later
    record. A tombstone (value None) removes its key. ``decode`` turns a value into a
    :class:`Progress` (raising DecodeError or ValueError: the record is skipped).

    >>> late = [(b"c:1:300", encode_progress(90, "h:/b", 300)), (b"c:1:100", encode_progress(40, "h:/a", 100))]
    >>> lives, stale = newest_lives(late, "c", lambda v: decode_progress(v, component="c", topic="t", partition=0, offset=0))
    >>> lives[1].flushed, stale
    (90, [b'c:1:100'])
    """
    latest: dict[bytes, tuple[int, int, Progress]] = {}
    for key, value in records:
        parsed = parse_progress_key(key, component)
        if parsed is None:
            continue
        if value is None:
            latest.pop(key, None)
            continue
        try:
            progress = decode(value)
        except (DecodeError, ValueError):
            continue
        task, epoch = parsed
        latest.pop(key, None)  # kept in the order of each key's last record
        latest[key] = (task, progress.epoch if epoch is None else epoch, progress)
    chosen: dict[int, bytes] = {}
    for key, (task, epoch, _) in latest.items():  # log order of each key's last record: ties go to the later
        if task not in chosen or epoch >= latest[chosen[task]][1]:
            chosen[task] = key
    stale = [key for key, (task, _, _) in latest.items() if chosen[task] != key]
    return {task: latest[key][2] for task, key in chosen.items()}, stale


class Progress(NamedTuple):
    """A task's last progress record.

    ``flushed``: the input offset its last flush made safe; ``place``: where it ran;
    ``epoch``: the life that wrote it (0: unknown); ``committed``: the input offset whose
    commit the broker last confirmed to that life (-1: none); ``handoff``: ``(T, L)`` of a
    drain that handed its batches on (None: none); ``fence``: its reader's ``(sender, epoch,
    first offset)`` entries for its partition (:mod:`streams.runtime.fencing`).
    """

    flushed: int
    place: str
    epoch: int = 0
    committed: int = -1
    handoff: tuple[int, int] | None = None
    fence: tuple[tuple[int, int, int], ...] = ()


def encode_progress(
    flushed: int,
    place: str,
    epoch: int = 0,
    committed: int = -1,
    handoff: tuple[int, int] | None = None,
    fence: list[tuple[int, int, int]] | tuple[tuple[int, int, int], ...] = (),
) -> bytes:
    """A progress record (``schemas/progress.schema.json``): see :class:`Progress`.

    >>> raw = encode_progress(10, "h:/s", 3, 9, (41, 12)); raw
    b'{"flushed":10,"place":"h:/s","epoch":3,"committed":9,"handoff":[41,12]}'
    >>> decode_progress(raw, component="c", topic="t", partition=0, offset=0).handoff
    (41, 12)
    """
    d: dict[str, object] = {"flushed": flushed, "place": place, "epoch": epoch, "committed": committed}
    if handoff is not None:
        d["handoff"] = list(handoff)
    if fence:
        d["fence"] = [list(e) for e in fence]
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
            handoff = (handoff[0], handoff[1])
        fence = d.get("fence", [])
        if not isinstance(fence, list) or not all(isinstance(e, list) and len(e) == 3 and all(type(v) is int and v >= -1 for v in e) for e in fence):
            raise ValueError("fence must be a list of [sender, epoch, offset]")
        return Progress(flushed, place, epoch, committed, handoff, tuple((e[0], e[1], e[2]) for e in fence))
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
