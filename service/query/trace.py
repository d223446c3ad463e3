"""``squall trace``: the sampled trees of a topology (``topology.debug``), read from ``squall.T.__trace``.

Trees are listed with how they ended; one tree, or every failed or timed-out tree, is printed
as a timeline, and for a tree that did not complete, :func:`streams.monitoring.trace.diagnose`
says which component held the edges that were never acked.
"""

from __future__ import annotations

from typing import Any

from service.brokers.admin import read_records, require_topic
from service.control.log import TopicTail
from service.exceptions import UsageError
from streams.exceptions import DecodeError
from streams.monitoring.trace import TraceEvent, decode_batch, diagnose, held_by, holders, outcome, timeline
from streams.wire.naming import trace_topic


def read_trees(bootstrap: str, topology: str, timeout_s: float = 60.0) -> dict[int, list[TraceEvent]]:
    """Every sampled tree's events, ``root -> [TraceEvent]`` in time order.

    Raises UsageError naming the topology when it has no trace topic on ``bootstrap``.
    """
    topic = trace_topic(topology)
    require_topic(bootstrap, topic, topology)
    trees: dict[int, list[TraceEvent]] = {}
    for i, (_key, value) in enumerate(read_records(bootstrap, topic, timeout_s)):
        try:
            events = decode_batch(value, topic=topic, partition=0, offset=i)
        except DecodeError:
            continue
        for ev in events:
            trees.setdefault(ev.root, []).append(ev)
    for events in trees.values():
        events.sort(key=lambda e: e.at)
    return trees


class TraceTail(TopicTail):
    """A tail of ``squall.T.__trace`` kept open (the UI's trace page): the last :attr:`KEPT` trees, ``root -> [TraceEvent]`` in time order.

    Raises UsageError naming the topology when it has no trace topic on ``bootstrap``.
    """

    KEPT = 2000
    """Trees kept in memory (the oldest first seen go first)."""

    def __init__(self, bootstrap: str, topology: str, overrides: dict[str, Any] | None = None) -> None:
        require_topic(bootstrap, trace_topic(topology), topology)
        super().__init__(bootstrap, trace_topic(topology), overrides)
        self.trees: dict[int, list[TraceEvent]] = {}

    def poll(self, timeout_s: float = 0.0) -> int:
        """Read what arrived (a record that does not decode is skipped); returns how many records."""
        msgs = self._messages(timeout_s)
        touched: set[int] = set()
        for m in msgs:
            try:
                events = decode_batch(m.value(), topic=self.topic, partition=0, offset=m.offset() or 0)
            except DecodeError:
                continue
            for ev in events:
                self.trees.setdefault(ev.root, []).append(ev)
                touched.add(ev.root)
        for root in touched:
            self.trees[root].sort(key=lambda e: e.at)
        for root in list(self.trees)[: max(0, len(self.trees) - self.KEPT)]:
            del self.trees[root]
        return len(msgs)


def parse_root(raw: str) -> int:
    """A root id as ``squall trace`` prints it (16 hex digits) or in decimal. Raises UsageError."""
    try:
        return int(raw, 16) if len(raw) == 16 else int(raw)
    except ValueError:
        raise UsageError(f"[trace] {raw!r} is not a root id (16 hex digits, or decimal)") from None


def tree_lines(root: int, events: list[TraceEvent]) -> list[str]:
    """One tree: a header with its outcome, its timeline, and (unless it completed) who held it."""
    ended = outcome(events)
    held = holders(events) if ended != "complete" else []
    out = [f"tree {root:016x}: {ended}, {len(events)} events" + (f", held by {', '.join(_label(h) for h in held)}" if held else "")]
    out += ["  " + line for line in timeline(events)]
    if ended != "complete":
        held = diagnose(events)
        out += ["  " + line for line in held] or ["  every emitted edge was acked or failed"]
    return out


def summary_lines(trees: dict[int, list[TraceEvent]], limit: int) -> list[str]:
    """The last ``limit`` trees, one line each: root, outcome, events, spout, first event's time."""
    rows = sorted(trees.items(), key=lambda kv: kv[1][0].at)[-limit:]
    return [f"{root:016x}  {outcome(ev):<9}  {len(ev):>3} events  from [{ev[0].component}]" for root, ev in rows]


def _label(holder: str) -> str:
    """``[count]``, or ``[slow] -> [count] (in transit)`` (:func:`streams.monitoring.trace.holders`)."""
    ends = holder.split(" -> ")
    return " -> ".join(f"[{c}]" for c in ends) + (" (in transit)" if len(ends) > 1 else "")


def timed_out(trees: dict[int, list[TraceEvent]], component: str | None = None) -> list[int]:
    """The roots of the timed-out trees, oldest first; with ``component``, only those it held (:func:`streams.monitoring.trace.held_by`)."""
    rows = sorted(trees.items(), key=lambda kv: kv[1][0].at)
    return [root for root, ev in rows if outcome(ev) == "timed out" and (component is None or any(held_by(h, component) for h in holders(ev)))]


def held_summary(trees: dict[int, list[TraceEvent]], roots: list[int]) -> list[str]:
    """``squall trace --timed-out``'s first lines: per holding component, how many of ``roots`` it held, most first.

    A tree held in several places counts for each; an edge in transit counts as
    ``[emitter] -> [target] (in transit)``; a tree held by none (every edge settled, yet it
    timed out) as ``(none)``.
    """
    counts: dict[str, int] = {}
    for root in roots:
        for h in holders(trees[root]) or ["(none)"]:
            label = _label(h) if h != "(none)" else h
            counts[label] = counts.get(label, 0) + 1
    width = max((len(c) for c in counts), default=0)
    return [f"held by {c:<{width}} {n} of {len(roots)} timed-out trees" for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
