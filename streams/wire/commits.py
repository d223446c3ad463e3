"""Offset commits that name their life, and the rule that undoes a replaced owner's late one.

A worker cut off from the broker while an offset commit was in flight, and replaced
meanwhile, can have that commit land long after: TCP delivers what it sent when the link
comes back, and Kafka takes any commit of a group without members (every executor reads
with an assign-only consumer: no generation to check). Seen on the embedded broker: a count
task's committed input offset moved 45,000 records back after a 40 s cut, and 44% of the
run was counted twice.

So every commit carries its life's claim epoch as metadata (:func:`commit_metadata`), and
each life keeps the commit the broker last confirmed to it in its own durable record (a bolt
task's progress, :mod:`streams.monitoring.bolt_progress`; a spout task's ledger,
:mod:`streams.monitoring.spout_ledger`). A new life that finds the group's committed offset
behind that one, written by an older epoch, starts from the newer one (:func:`fenced_commit`).

A contiguous commit stops at the oldest tree in flight, and everything finished (acked or
dead-lettered) above it would be replayed by the next life. So at each commit a spout task's
ledger also keeps the finished ranges above it, and a new life takes the records in them as
finished without emitting them (:func:`finished_from`): a takeover or a restart replays what
was in flight, not everything behind one slow tree. Storm's KafkaSpout commits only the
contiguous offset. (The ledger, not the commit's metadata: the embedded broker keeps no
metadata.)
"""

from __future__ import annotations

import logging

log = logging.getLogger("squall.commits")

PREFIX = "squall.epoch="

MAX_FINISHED_RANGES = 200
"""Finished ranges a spout task's ledger keeps per source partition, at most (the lowest: what does not fit is replayed, as before)."""


def commit_metadata(epoch: int) -> str:
    """The metadata of an offset commit by a life of claim ``epoch``; :func:`commit_epoch` reads it back.

    >>> commit_metadata(1764232345123), commit_epoch(commit_metadata(1764232345123)), commit_epoch(""), commit_epoch(None)
    ('squall.epoch=1764232345123', 1764232345123, 0, 0)
    """
    return f"{PREFIX}{epoch}"


def commit_epoch(metadata: str | None) -> int:
    """The epoch in an offset commit's metadata (0: none, or not Squall's)."""
    if not metadata or not metadata.startswith(PREFIX):
        return 0
    value = metadata[len(PREFIX) :]
    return int(value) if value.isdigit() else 0


def fenced_commit(newer_epoch: int, newer_commit: int, committed: int, committed_epoch: int) -> int | None:
    """Where a new life starts instead of ``committed``, when that commit was a replaced owner's late one; None when ``committed`` stands.

    ``newer_epoch`` and ``newer_commit``: the last life's epoch and the commit the broker
    confirmed to it (-1: none), from its durable record. ``committed`` is a late one when
    that life is newer than the commit's own epoch and had a later commit confirmed: only an
    older owner's commit landing after it can have moved the offset back.

    >>> fenced_commit(300, 53000, committed=7736, committed_epoch=100)
    53000
    >>> fenced_commit(300, 53000, committed=53000, committed_epoch=300) is None  # its own
    True
    >>> fenced_commit(300, -1, committed=700, committed_epoch=100) is None  # a crash: no later commit confirmed
    True
    """
    if newer_epoch <= committed_epoch or newer_commit <= max(committed, 0):
        return None
    return newer_commit


def resume_at(component: str, where: str, committed: tuple[int, str], last: tuple[int, int] | None) -> tuple[int, bool]:
    """Where a task of ``component`` starts reading ``where`` (``topic[p]``), and whether a late commit was passed over.

    ``committed``: the group's ``(offset, metadata)``; ``last``: the task's last life,
    ``(epoch, the commit confirmed to it)``, from its durable record (None: none). The offset
    is ``committed``'s, unless :func:`fenced_commit` finds it a replaced owner's late commit:
    then the newer one, said in a warning naming the component, partition, offsets and epochs.

    >>> resume_at("count", "squall.wc.count[2]", (7736, commit_metadata(100)), (300, 53000))
    (53000, True)
    >>> resume_at("count", "squall.wc.count[2]", (7736, commit_metadata(100)), None)
    (7736, False)
    """
    offset, metadata = committed
    epoch = commit_epoch(metadata)
    start = None if last is None else fenced_commit(last[0], last[1], offset, epoch)
    if start is None:
        return offset, False
    log.warning(
        "[%s] %s: the committed offset %d came from epoch %d, after epoch %d had its commit of %d confirmed (a replaced owner's late commit): starting from it",
        component,
        where,
        offset,
        epoch,
        last[0] if last is not None else 0,
        start,
    )
    return start, True


def finished_from(ranges: list[tuple[int, int]] | list[list[int]], start: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges of finished offsets at or above ``start`` (a new life's first offset), sorted and merged.

    Finished is a fact about an offset, whichever life finished it and whichever commit
    followed: so ranges kept by any earlier life may be used.

    >>> finished_from([(90, 95), (99, 101), (101, 103), (120, 121)], 100)
    [(100, 103), (120, 121)]
    >>> finished_from([], 0)
    []
    """
    out: list[tuple[int, int]] = []
    for a, b in sorted((int(r[0]), int(r[1])) for r in ranges):
        a = max(a, start)
        if a >= b:
            continue
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
