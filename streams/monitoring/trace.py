"""Sampled tuple tracing: every event of a sampled tree, on ``squall.T.__trace`` (Storm's ``topology.debug``, STORM-135's "tracer bullets").

With ``topology.debug`` on, a tree is sampled when its root id's top 32 bits fall below
``squall.trace.sample.rate`` x 2^32. Root ids are uniform random 64-bit numbers, so every
executor decides the same way from the root alone: nothing travels with the tuples. A bolt
executor decides once per tuple, when it reads it (one comparison per root), and marks it
(``Tuple.traced``); execute, the emits anchored to it, and its ack or fail then read that flag.

For each sampled tree (:data:`EVENTS`):

* the spout's ``emit`` of each tuple (its edge id and target component);
* each bolt task's ``receive`` (the input's edge id), ``emit`` (the new edge and its target),
  ``ack``, ``fail``, and ``execute`` when ``execute`` returned;
* the acker's ``init``, ``ack`` (an XOR arrived), ``complete``, ``fail`` and ``timeout``.

A :class:`TraceEvent` names the component, task, worker and wall-clock time. An executor
buffers its events and publishes them as one record per half second
(``schemas/trace.schema.json``, encoded with orjson), so a sampled tree costs a few list
appends where it passes. Cost at 1% (``python -m bench trace-cpu``): about 2% of the executor
paths' CPU, of which 0.8% is the unsampled tuples' check.

:func:`diagnose` reads one tree's events: an edge that was emitted but never acked belongs to
the component it was sent to; if a task received it, that task held it (``squall trace NAME
--timed-out`` says so), otherwise it never arrived.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from streams.exceptions import DecodeError
from streams.model.tuple import Tuple

EVENTS = ("emit", "receive", "execute", "ack", "fail", "init", "acker_ack", "complete", "acker_fail", "timeout")
"""What happened to a sampled tree (``acker_*``: the acker's view of an ack or fail op)."""

ACKER_OUTCOMES = {"complete": "complete", "fail": "acker_fail", "timeout": "timeout"}
"""The acker ledger's outcome reasons as trace events."""


def threshold(rate: float) -> int:
    """The 32-bit threshold a sample ``rate`` (0..1) gives (0: nothing sampled)."""
    return max(0, min(1 << 32, int(rate * (1 << 32))))


def sampled(root: int, limit: int) -> bool:
    """Is the tree ``root`` sampled at ``limit`` (:func:`threshold`)? The same answer in every process.

    >>> sampled(0x00000001_FFFFFFFF, threshold(0.01)), sampled(0xFFFFFFFF_00000000, threshold(0.01))
    (True, False)
    """
    return (root >> 32) < limit


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One event of a sampled tree.

    Attributes:
      root: the tree's root id; event: one of :data:`EVENTS`.
      component, task, worker: where it happened (task -1: the executor's).
      at: wall-clock seconds.
      edge: the edge id it concerns (an emit's new edge, a receive's or ack's input edge;
        the acker's init and ack: the XOR it applied); 0 for none.
      target: an emit's target component ("" otherwise).
      stream: the tuple's stream ("" for none).
      where: the input record, ``topic[partition]@offset`` ("" for none).
    """

    root: int
    event: str
    component: str
    task: int
    worker: str
    at: float
    edge: int = 0
    target: str = ""
    stream: str = ""
    where: str = ""


def encode_batch(component: str, worker: str, events: list[list[Any]]) -> bytes:
    """One ``squall.T.__trace`` record: an executor's events since its last flush (``schemas/trace.schema.json``).

    ``events``: ``[root, event, task, at, edge, target, stream, where]`` each.
    """
    return orjson.dumps({"component": component, "worker": worker, "events": events})  # compact JSON; 12x json.dumps here


def decode_batch(raw: bytes | None, *, topic: str, partition: int, offset: int) -> list[TraceEvent]:
    """The events in a ``squall.T.__trace`` record. Raises DecodeError naming the topic, partition and offset."""
    try:
        d = orjson.loads(raw or b"null")
        if not isinstance(d, dict):
            raise ValueError("not an object")
        component, worker = str(d["component"]), str(d["worker"])
        out = []
        for root, event, task, at, edge, target, stream, where in d["events"]:
            if event not in EVENTS:
                raise ValueError(f"unknown event {event!r}")
            out.append(TraceEvent(int(root), event, component, int(task), worker, float(at), int(edge), str(target), str(stream), str(where)))
        return out
    except (ValueError, KeyError, TypeError) as exc:
        raise DecodeError(f"not a trace record: {exc}", component="__trace", topic=topic, partition=partition, offset=offset) from exc


class Tracer:
    """An executor's tracer: decides what is sampled, buffers its events, and publishes them as one record per flush.

    Callers check ``(root >> 32) < tracer.limit`` inline (hot paths) or call :meth:`sampled`.

    Args:
      component, worker: the executor's.
      rate: ``squall.trace.sample.rate`` (0..1).
      publish: ``publish(key, value)`` writes one record to ``squall.T.__trace``.
      wall: wall-clock seconds.
      flush_s: at most this long between an event and its record (seconds).
    """

    MAX_BUFFERED = 500
    """Events that make a record at once, before :attr:`flush_s` is up."""

    def __init__(
        self, component: str, worker: str, rate: float, publish: Callable[[bytes, bytes], None], wall: Callable[[], float] = time.time, flush_s: float = 0.5
    ) -> None:
        self.component = component
        self.worker = worker
        self.limit = threshold(rate)
        self.publish = publish
        self.wall = wall
        self.flush_s = flush_s
        self.pending: list[list[Any]] = []
        self.next_flush = 0.0
        self.events = 0
        """Events published (``squall_trace_events_total``)."""

    def sampled(self, root: int) -> bool:
        """Is ``root``'s tree sampled?"""
        return (root >> 32) < self.limit

    def event(self, event: str, root: int, task: int, *, edge: int = 0, target: str = "", stream: str = "", where: str = "") -> None:
        """Buffer one event of ``root``'s tree (the caller checked that it is sampled)."""
        self.pending.append([root, event, task, self.wall(), edge, target, stream, where])
        if len(self.pending) >= self.MAX_BUFFERED:
            self.flush()

    def events_of(self, t: Tuple, event: str, task: int) -> None:
        """``event`` for each sampled tree the tuple ``t`` belongs to, with its input edge in that tree."""
        limit, pending = self.limit, self.pending
        at = self.wall()
        for root, edge in t.anchors.items():
            if (root >> 32) < limit:
                pending.append([root, event, task, at, edge, "", t.stream, t.where])
        if len(pending) >= self.MAX_BUFFERED:
            self.flush()

    def maybe_flush(self, now: float) -> None:
        """Publish the buffered events if :attr:`flush_s` passed since the last record (``now``: monotonic seconds)."""
        if self.pending and now >= self.next_flush:
            self.next_flush = now + self.flush_s
            self.flush()

    def flush(self) -> None:
        """Publish the buffered events as one record (key: the component)."""
        if self.pending:
            self.publish(self.component.encode(), encode_batch(self.component, self.worker, self.pending))
            self.events += len(self.pending)
            self.pending = []


def timeline(events: list[TraceEvent]) -> list[str]:
    """One tree's events as lines, in time order: seconds since its first event, component, task, worker, event, edge, target."""
    if not events:
        return []
    ordered = sorted(events, key=lambda e: e.at)
    start = ordered[0].at
    out = []
    for e in ordered:
        detail = f" edge {e.edge:016x}" if e.edge else ""
        detail += f" -> [{e.target}]" if e.target else ""
        detail += f" on {e.where}" if e.where else ""
        out.append(f"+{e.at - start:8.3f}s [{e.component}] task {e.task} ({e.worker}) {e.event}{detail}")
    return out


def outcome(events: list[TraceEvent]) -> str:
    """How the tree ended, as the acker saw it: ``complete``, ``failed``, ``timed out``, or ``pending``."""
    kinds = {e.event for e in events}
    if "complete" in kinds:
        return "complete"
    if "acker_fail" in kinds:
        return "failed"
    if "timeout" in kinds:
        return "timed out"
    return "pending"


def _unsettled(events: list[TraceEvent]) -> tuple[float, float, list[tuple[int, TraceEvent, TraceEvent | None, TraceEvent | None]]]:
    """``(start, horizon, [(edge, emit, receive or None, ack/fail or None)])`` of the edges not settled when the tree ended (:func:`diagnose`)."""
    ordered = sorted(events, key=lambda e: e.at)
    start = ordered[0].at
    end = next((e.at for e in ordered if e.event in ("timeout", "acker_fail")), None)
    horizon = end if end is not None else float("inf")
    emitted = {e.edge: e for e in ordered if e.event == "emit" and e.edge and e.at <= horizon}
    settled = {e.edge: e for e in ordered if e.event in ("ack", "fail") and e.edge}
    received = {e.edge: e for e in ordered if e.event == "receive" and e.edge}
    out = []
    for edge, em in emitted.items():
        done = settled.get(edge)
        if done is None or done.at > horizon:
            out.append((edge, em, received.get(edge), done))
    return start, horizon, out


def holders(events: list[TraceEvent]) -> list[str]:
    """Where a tree that did not complete was held, longest first (none for a tree that completed).

    Every edge emitted before the tree ended (:func:`diagnose` says when) spends time in two
    places until it is acked or the tree ends, whichever comes first: **in transit**
    (``"slow -> count"``: from the emit to the target's ``receive``, in the emitter's
    unflushed output or the target's input; the trace cannot tell which) and **held by the
    target** (``"count"``: from its ``receive`` to its ack or fail). Time is summed per place
    (seconds); the places that held the tree for at least half as long as the longest one are
    its holders, longest first. A tree still pending ends, here, at its last event.

    So a tree queued for 8 s behind a bolt whose ``execute`` slept, then passed on and timed
    out 0.3 s after the next bolt received it, is held by ``"lines -> slow"`` (or ``"slow"``),
    not by the bolt that had it at the end.

    >>> e = lambda kind, comp, at, edge, target="": TraceEvent(7, kind, comp, 0, "w0", at, edge, target)
    >>> holders([e("emit", "lines", 0.0, 1, "slow"), e("receive", "slow", 8.0, 1), e("emit", "slow", 8.0, 2, "count"),
    ...          e("ack", "slow", 8.0, 1), e("receive", "count", 8.2, 2), e("timeout", "__acker", 8.5, 0)])
    ['lines -> slow']
    """
    if not events:
        return []
    if outcome(events) == "complete":
        return []
    ordered = sorted(events, key=lambda e: e.at)
    horizon = next((e.at for e in ordered if e.event in ("timeout", "acker_fail")), ordered[-1].at)  # pending: its last event
    settled = {e.edge: e.at for e in ordered if e.event in ("ack", "fail") and e.edge}
    received = {e.edge: e for e in ordered if e.event == "receive" and e.edge}
    held: dict[str, float] = {}
    for em in ordered:
        if em.event != "emit" or not em.edge or em.at > horizon:
            continue
        end = min(settled.get(em.edge, horizon), horizon)
        got = received.get(em.edge)
        arrived = min(got.at, end) if got is not None else end
        transit = f"{em.component} -> {em.target}"
        held[transit] = held.get(transit, 0.0) + max(0.0, arrived - em.at)
        if got is not None and got.at < end:
            held[got.component] = held.get(got.component, 0.0) + (end - got.at)
    longest = max(held.values(), default=0.0)
    if longest <= 0.0:
        return []
    return [place for place, s in sorted(held.items(), key=lambda kv: -kv[1]) if s >= longest / 2]


def held_by(holder: str, component: str) -> bool:
    """``component`` held it (:func:`holders`): it is the holder, or either end of an edge in transit.

    >>> held_by("slow -> count", "slow"), held_by("slow -> count", "count"), held_by("count", "slow")
    (True, True, False)
    """
    return component in holder.split(" -> ")


def diagnose(events: list[TraceEvent]) -> list[str]:
    """Which component held a tree that did not complete: one line per edge not acked in time (none for a tree that completed).

    An edge is emitted (by the spout or a bolt, to a target component) and acked by the task
    that received it. Only edges emitted before the tree ended (the acker's ``timeout`` or
    ``acker_fail``) count. For each one not acked by then:

    * received before the end: that task held it (a slow or stuck ``execute``, or a bolt
      that never acks); a late ack says for how long;
    * received after the end: it waited in the target's input (the target was busy, or behind);
    * never received: it never reached the target (it still waited, or was lost).
    """
    if not events:
        return []
    start, horizon, unsettled = _unsettled(events)
    out = []
    for edge, em, got, done in unsettled:
        name = f"edge {edge:016x} from [{em.component}]"
        if got is None:
            out.append(f"{name} to [{em.target}] was never received: it never reached [{em.target}]")
        elif got.at > horizon:
            out.append(
                f"{name} reached [{got.component}] task {got.task} ({got.worker}) only at +{got.at - start:.3f}s, after the tree ended at "
                f"+{horizon - start:.3f}s: it waited in [{got.component}]'s input"
            )
        elif done is None:
            out.append(
                f"{name} was received by [{got.component}] task {got.task} ({got.worker}) at +{got.at - start:.3f}s and never acked: [{got.component}] held it"
            )
        else:
            out.append(
                f"{name} was received by [{got.component}] task {got.task} ({got.worker}) at +{got.at - start:.3f}s and {done.event}ed only at "
                f"+{done.at - start:.3f}s, after the tree ended at +{horizon - start:.3f}s: [{got.component}] held it {done.at - got.at:.3f}s"
            )
    return out
