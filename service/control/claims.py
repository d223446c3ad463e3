"""Which worker processes may be running which tasks, cluster-wide (pure).

Executors own fixed tasks (:mod:`service.control.scheduling`), so two running executors must never
own the same task: both would process the same records. When a task changes hands (a
``rebalance``, a slot that moves to another supervisor), its new owner waits until the old
one is gone. Supervisors tell each other through ``squall.__events``: ``started`` (with the
worker's pid and the tasks it claims), ``stopped`` and ``crashed``. A claim is open from
its ``started`` event until the matching ``stopped``/``crashed``.

An open claim *holds* while its process may still be alive: it started less than
``startup_grace_s`` ago, or its executors publish live stats (the caller's ``live``
predicate, from the topology's stats topic). A supervisor killed with SIGKILL never closes
its claims, but its workers died with it (``PR_SET_PDEATHSIG``), so their stats stop and
the claims stop holding within the stats freshness window.

>>> book = ClaimBook(startup_grace_s=5.0)
>>> book.apply({"event": "started", "topology": "wc", "worker": 0, "supervisor": "s1", "pid": 7,
...             "tasks": [["count", 0], ["count", 1]], "at": 100.0})
>>> [c.worker for c in book.blocking("wc", {("count", 1)}, now=101.0, live=lambda c: False)]
[0]
>>> book.blocking("wc", {("count", 1)}, now=200.0, live=lambda c: False)  # dead: no live stats
[]
>>> book.apply({"event": "stopped", "topology": "wc", "worker": 0, "supervisor": "s1", "pid": 7, "at": 102.0})
>>> book.blocking("wc", {("count", 1)}, now=102.5, live=lambda c: True)
[]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from service.control.scheduling import ExecutorAssignment

TaskRef = tuple[str, int]
"""``(component id, task index)``: one task of one component (``__acker`` included)."""


class Claim(NamedTuple):
    """A worker process that was started and has not been seen to exit."""

    topology: str
    worker: int
    supervisor: str
    pid: int
    tasks: frozenset[TaskRef]
    started_at: float
    code: int = 1
    """The code version it runs (``squall update``; events before updates existed say none: 1)."""


def task_refs(executors: Iterable[ExecutorAssignment]) -> frozenset[TaskRef]:
    """The tasks a worker's executors claim."""
    return frozenset((e.component, t) for e in executors for t in e.tasks)


class ClaimBook:
    """Open claims, fed with the events of ``squall.__events`` (in any order of arrival; applying an event twice is harmless).

    Args: startup_grace_s: how long after its start a claim holds without live stats
    (seconds; covers a worker's start-up before its executors publish their first snapshot).
    Not thread-safe.
    """

    def __init__(self, startup_grace_s: float = 10.0) -> None:
        self.startup_grace_s = startup_grace_s
        self.open: dict[tuple[str, str, int], Claim] = {}
        self._closed: set[tuple[str, str, int]] = set()
        self.epochs: dict[tuple[str, TaskRef], int] = {}
        """The highest claim epoch seen per ``(topology, task)`` (:meth:`next_epoch`)."""

    @classmethod
    def of(cls, events: Iterable[Mapping[str, Any]]) -> ClaimBook:
        """A book with ``events`` applied (a reader's view of every claim, as ``squall status`` takes it)."""
        book = cls()
        for e in events:
            book.apply(e)
        return book

    def apply(self, event: Mapping[str, Any]) -> None:
        """Apply one event (others than started/stopped/crashed/fenced are ignored)."""
        kind = event.get("event")
        pid = event.get("pid")
        if kind not in ("started", "stopped", "crashed", "fenced") or pid is None:
            return
        key = (str(event["topology"]), str(event["supervisor"]), int(pid))
        if kind == "started" and isinstance(event.get("epoch"), int):
            for c, t in event.get("tasks", []):
                ref = (key[0], (str(c), int(t)))
                self.epochs[ref] = max(self.epochs.get(ref, 0), event["epoch"])
        if kind == "started":
            if key not in self._closed:  # a late-read start of a process already seen to exit
                tasks = frozenset((str(c), int(t)) for c, t in event.get("tasks", []))
                self.open[key] = Claim(key[0], int(event["worker"]), key[1], key[2], tasks, float(event["at"]), int(event.get("code", 1)))
        else:
            self.open.pop(key, None)
            self._closed.add(key)

    def blocking(self, topology: str, tasks: Iterable[TaskRef], now: float, live: Callable[[Claim], bool]) -> list[Claim]:
        """The open claims on any of ``tasks`` of ``topology`` that still hold at ``now`` (wall-clock seconds).

        ``live(claim)`` tells whether its executors publish live stats.
        """
        want = frozenset(tasks)
        out = []
        for claim in self.open.values():
            if claim.topology != topology or not (claim.tasks & want):
                continue
            if now - claim.started_at < self.startup_grace_s or live(claim):
                out.append(claim)
        return out

    def of_worker(self, topology: str, worker: int) -> list[Claim]:
        """The open claims of worker ``worker`` of ``topology`` (more than one while a restarted process's old exit is unread)."""
        return [c for c in self.open.values() if c.topology == topology and c.worker == worker]

    def other_code(self, topology: str, code: int, now: float, live: Callable[[Claim], bool]) -> list[Claim]:
        """The open claims of ``topology`` that run another code version than ``code`` and still hold at ``now`` (a ``--drain-all`` update waits for them)."""
        return [c for c in self.open.values() if c.topology == topology and c.code != code and (now - c.started_at < self.startup_grace_s or live(c))]

    def next_epoch(self, topology: str, tasks: Iterable[TaskRef], now_ms: int) -> int:
        """The claim epoch for a new worker on ``tasks``: ``now_ms``, or one more than any earlier claim on them if that is larger.

        Every later owner of a task gets a larger epoch, whatever the clocks of the hosts do;
        readers drop what an older epoch writes after a newer one (:mod:`streams.runtime.fencing`).

        >>> book = ClaimBook()
        >>> book.apply({"event": "started", "topology": "wc", "worker": 0, "supervisor": "s1", "pid": 7, "tasks": [["count", 0]], "at": 1.0, "epoch": 5000})
        >>> book.next_epoch("wc", [("count", 0)], now_ms=4000), book.next_epoch("wc", [("count", 1)], now_ms=4000)
        (5001, 4000)
        """
        return max([now_ms, *(self.epochs.get((topology, t), -1) + 1 for t in tasks)])

    def contested(self, live: Callable[[Claim], bool]) -> dict[tuple[str, TaskRef], list[Claim]]:
        """Tasks that two or more open claims with live stats hold at once: ``(topology, task) -> claims``.

        It should never happen (a worker's lease lapses before its claim does, and a worker whose
        task is claimed by another process fences itself: :mod:`service.worker.claim_watch`); the
        supervisor exports it as ``squall_tasks_contested`` and alerts on it.

        >>> book = ClaimBook()
        >>> for pid, sup in ((7, "s1"), (9, "s2")):
        ...     book.apply({"event": "started", "topology": "wc", "worker": 0, "supervisor": sup, "pid": pid, "tasks": [["count", 0]], "at": 1.0})
        >>> sorted((k, [c.pid for c in v]) for k, v in book.contested(lambda c: True).items())
        [(('wc', ('count', 0)), [7, 9])]
        >>> book.contested(lambda c: c.pid == 7)
        {}
        """
        holders: dict[tuple[str, TaskRef], list[Claim]] = {}
        for claim in self.open.values():
            if live(claim):
                for task in claim.tasks:
                    holders.setdefault((claim.topology, task), []).append(claim)
        return {k: v for k, v in holders.items() if len(v) > 1}
