"""``squall status`` and ``squall list`` kept live: tails that stay open between requests, so an answer reads only what arrived since the last.

:func:`service.query.status.status` reads four topics to their end on every call (the control
record, the stats, the events and the error reports; about 2 s per request on the embedded
broker) and loads the topology's source to learn its shape. A supervisor answers the Storm UI's
REST API and its pages many times a second, so :class:`LiveStatus` keeps, per topology:

1. the control topic's tail (:class:`~service.control.log.ControlLog`), read to its end once,
   then polled without waiting;
2. a :class:`~streams.monitoring.board.StatsBoard`, read to now once, then polled;
3. the events topic's tail (every worker event, as :func:`~service.query.status.status` reads them,
   and the supervisors' last heartbeats: :meth:`LiveStatus.supervisors`);
4. the error reports' tail, the latest report per key, as compaction keeps them;
5. the topology's shape (:func:`~service.control.client.topology_shape`), per record version;
6. Storm's stat windows (:class:`~service.query.windows.StatWindows`), sampled at each answer;
7. the sampled trees' tail (:class:`~service.query.trace.TraceTail`) and the dead letters'
   (:class:`~service.query.dlq.DeadLetterTail`), for the UI's pages.

Each answer polls what arrived (no waiting) and builds the same dict as ``status``
(:func:`~service.query.status.build_status`). A topology gone from the control topic has its
tails closed on the next answer. Thread-safe: one lock around the tails (the HTTP server's
threads share them).

The Storm UI asks Nimbus, which keeps its cluster state in memory; this is the same idea with
Kafka topics as the state.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from service.brokers.admin import require_topic
from service.control.client import Client, topology_shape
from service.control.events import SUPERVISORS_KEY, live_supervisors
from service.control.log import ControlLog, EventLog, TopicTail
from service.control.record import TopologyRecord
from service.exceptions import BrokerError, ControlError, UsageError
from service.query.dlq import DeadLetter, DeadLetterTail
from service.query.status import build_status, topology_row, window_totals
from service.query.trace import TraceTail
from service.query.windows import WINDOWS, StatWindows
from streams.exceptions import DecodeError
from streams.monitoring.board import StatsBoard
from streams.monitoring.errors import ErrorReport
from streams.monitoring.trace import TraceEvent
from streams.wire.naming import errors_topic

CATCH_UP_S = 15.0
"""How long a first read of a topic to its end may take (seconds) before it is an error."""


class ErrorTail(TopicTail):
    """A tail of ``squall.T.__errors``: the latest report per key, as compaction keeps them (:func:`streams.monitoring.errors.latest_reports`)."""

    def __init__(self, bootstrap: str, topology: str, overrides: dict[str, Any] | None = None) -> None:
        super().__init__(bootstrap, errors_topic(topology), overrides)
        self.by_key: dict[bytes | None, ErrorReport] = {}

    def poll(self, timeout_s: float = 0.0) -> int:
        """Apply what arrived (a record that is not a report is skipped); returns how many records were read."""
        msgs = self._messages(timeout_s)
        for msg in msgs:
            try:
                self.by_key[msg.key()] = ErrorReport.decode(msg.value(), topic=self.topic, partition=0, offset=msg.offset() or 0)
            except DecodeError:
                continue
        return len(msgs)

    def reports(self) -> list[ErrorReport]:
        """The reports, oldest first."""
        return sorted(self.by_key.values(), key=lambda r: r.at)


def catch_up(poll: Callable[[float], object], caught_up: Callable[[], bool], what: str, timeout_s: float = CATCH_UP_S) -> None:
    """Poll until ``caught_up()``; raises BrokerError naming ``what`` after ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = poll(0.1)
        if not got and caught_up():
            return
        if time.monotonic() > deadline:
            raise BrokerError(f"[{what}] could not read to its end within {timeout_s} s")


class LiveStatus:
    """:func:`~service.query.status.status` and :func:`~service.query.status.list_topologies` answered from tails kept open (module docstring).

    Args:
      client: the broker, the service-level config and Kafka client overrides.
      clock: wall-clock seconds (uptimes).
    Raises ControlError for an unknown topology, BrokerError when a first read does not finish.
    """

    def __init__(self, client: Client, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self.clock = clock
        self.lock = threading.Lock()
        self.control: ControlLog | None = None
        self.events: EventLog | None = None
        self.every_event: list[dict[str, Any]] = []
        self.beats: dict[str, dict[str, Any]] = {}
        """``supervisor -> its last heartbeat`` (``schemas/supervisor.schema.json``)."""
        self.boards: dict[str, StatsBoard] = {}
        self.errors: dict[str, ErrorTail] = {}
        self.shapes: dict[str, tuple[tuple[int, str], dict[str, Any]]] = {}
        """``topology -> ((record version, its debug), shape)``."""
        self.windows: dict[str, StatWindows] = {}
        self.traces: dict[str, TraceTail] = {}
        self.dlqs: dict[str, DeadLetterTail] = {}
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="live-sync")
        """Asks the tails' high watermarks side by side (:meth:`sync`)."""

    def rows(self) -> list[dict[str, Any]]:
        """``squall list``'s rows, by name."""
        with self.lock:
            records = self._records()
            now = self.clock()
            return [topology_row(rec, self._shape(rec), now) for rec in sorted(records.values(), key=lambda r: r.name)]

    def record(self, name: str) -> TopologyRecord:
        """Topology ``name``'s control record. Raises ControlError naming it if there is none."""
        with self.lock:
            rec = self._records().get(name)
        if rec is None:
            raise ControlError(f"[{name}] no such topology (see: squall list)")
        return rec

    def status(self, name: str) -> dict[str, Any]:
        """``squall status --json`` of topology ``name``. Raises ControlError naming it if there is none."""
        with self.lock:
            rec = self._records().get(name)
            if rec is None:
                raise ControlError(f"[{name}] no such topology (see: squall list)")
            shape = self._shape(rec)
            board = self._board(name)
            every_event = self._every_event()
            reports = self._reports(name)
            now = self.clock()
            st = build_status(rec, shape, board, every_event, reports, now)
            current = window_totals(st)
            windows = self.windows.setdefault(name, StatWindows())
            windows.record(now, current)
            st["windows"] = {}
            for key, label, seconds in WINDOWS:
                w = windows.window(seconds, now, current)
                st["windows"][key] = {"label": label, "seconds": seconds, "since": w.since, "partial": w.partial, "components": w.components}
            st["actions"] = list(rec.actions)
            return st

    def sync(self, name: str | None = None, which: tuple[str, ...] = ("control",), timeout_s: float = 1.0) -> None:
        """Read tails up to the high watermarks the broker gives now: read your writes (``squall submit``, then ``squall status``).

        ``which``: ``control``, ``events``, and for topology ``name`` its ``errors`` and ``dlq``
        tails. The high watermarks are asked side by side (one round trip in all, about 25 ms on
        a busy embedded broker, rather than one per tail). Gives up quietly after ``timeout_s``
        seconds: the answer is then the tails' as they are. Other tails lag what arrived by
        about one fetch (``fetch.wait.max.ms`` 50) and are not waited for.
        """
        with self.lock:
            self._records()
            tails: list[tuple[TopicTail, Callable[[float], object]]] = []
            if "control" in which and self.control is not None:
                tails.append((self.control, self.control.poll))
            if "events" in which:
                self._every_event()
                if self.events is not None:
                    events = self.events
                    tails.append((events, lambda t: self._keep(events.poll(t))))
            if name is not None and name in self._records():
                if "errors" in which:
                    self._reports(name)
                    if name in self.errors:
                        tails.append((self.errors[name], self.errors[name].poll))
                if "dlq" in which:
                    self._dead_letter_tail(name)
                    if name in self.dlqs:
                        tails.append((self.dlqs[name], self.dlqs[name].poll))
            if not tails:
                return
            deadline = time.monotonic() + timeout_s
            highs = list(self.pool.map(lambda t: t[0].high_now(timeout_s), tails))
            for (tail, poll), high in zip(tails, highs, strict=True):
                while tail.position < high and time.monotonic() < deadline:
                    poll(0.05)

    def shape(self, name: str) -> dict[str, Any]:
        """Topology ``name``'s shape (:func:`~service.control.client.topology_shape`). Raises ControlError naming it if there is none."""
        with self.lock:
            rec = self._records().get(name)
            if rec is None:
                raise ControlError(f"[{name}] no such topology (see: squall list)")
            return self._shape(rec)

    def log_links(self, name: str) -> dict[str, str]:
        """``"w<N>" -> URL of that worker's log`` on the supervisor that last started it (``/logs/<topology>/<N>``), for the supervisors up now."""
        with self.lock:
            events = self._every_event()
            up = {b["supervisor"]: b["http"] for b in live_supervisors(self.beats, self.clock())}
        where: dict[int, str] = {}
        for e in events:
            if e.get("topology") == name and e.get("event") == "started" and isinstance(e.get("worker"), int):
                where[e["worker"]] = str(e.get("supervisor"))
        return {f"w{w}": f"http://{up[sup]}/logs/{name}/{w}" for w, sup in sorted(where.items()) if sup in up}

    def trees(self, name: str) -> dict[int, list[TraceEvent]]:
        """Topology ``name``'s sampled trees (the last :attr:`TraceTail.KEPT`), ``root -> events`` (none without a trace topic)."""
        with self.lock:
            if name not in self._records():
                return {}
            tail = self.traces.get(name)
            if tail is None:
                try:
                    tail = TraceTail(self.client.bootstrap, name, self.client.kafka.get("consumer"))
                except UsageError:
                    return {}
                catch_up(tail.poll, tail.caught_up, tail.topic)
                self.traces[name] = tail
            else:
                tail.poll(0)
            return dict(tail.trees)

    def dead_letters(self, name: str) -> tuple[list[DeadLetter], int]:
        """Topology ``name``'s last dead letters (:attr:`DeadLetterTail.KEPT`), oldest first, and how many there are in all."""
        with self.lock:
            if name not in self._records():
                return [], 0
            tail = self._dead_letter_tail(name)
            return (list(tail.letters), tail.total) if tail is not None else ([], 0)

    def read_own_write(self, timeout_s: float = 5.0) -> None:
        """Read the control log to its end now, so that the next answer shows a control record just written.

        The UI calls it after an action that writes one (deactivate, debug, log level): the page it
        redirects to then shows the new state, not the state of the last poll. Raises BrokerError if
        reading takes over ``timeout_s`` seconds.
        """
        with self.lock:
            if self.control is not None:
                self.control.catch_up(timeout_s)

    def refresh(self) -> None:
        """Poll every tail, opening those of topologies not seen yet.

        A supervisor calls it every few seconds, so that an answer, the first one included, reads little.
        """
        for row in self.rows():
            try:
                self.status(row["name"])
                self.error_reports(row["name"])
                self.trees(row["name"])
                self.dead_letters(row["name"])
            except ControlError:
                continue  # killed meanwhile

    def supervisors(self) -> list[dict[str, Any]]:
        """The supervisors up now: their last heartbeats, by id (:func:`~service.control.events.live_supervisors`)."""
        with self.lock:
            self._every_event()
            return live_supervisors(self.beats, self.clock())

    def error_reports(self, name: str) -> list[ErrorReport]:
        """Topology ``name``'s error reports, oldest first (none for an unknown topology, or one without an errors topic yet)."""
        with self.lock:
            if name not in self._records():
                return []
            return self._reports(name)

    def close(self) -> None:
        """Close every tail."""
        with self.lock:
            for tail in [self.control, self.events, *self.errors.values(), *self.traces.values(), *self.dlqs.values()]:
                if tail is not None:
                    tail.close()
            for board in self.boards.values():
                board.close()
            self.control, self.events = None, None
            self.boards.clear()
            self.errors.clear()
            self.traces.clear()
            self.dlqs.clear()
        self.pool.shutdown(wait=False)

    # -- the tails (under the lock) ---------------------------------------------------------------
    def _records(self) -> dict[str, TopologyRecord]:
        if self.control is None:
            self.client.connect()
            control = ControlLog(self.client.bootstrap, self.client.names, self.client.kafka.get("consumer"))
            control.catch_up(CATCH_UP_S)
            self.control = control
        else:
            self.control.poll(0)
        records = self.control.records
        for name in [n for n in self.boards if n not in records]:  # killed: its tails go
            self.boards.pop(name).close()
        for name in [n for n in self.errors if n not in records]:
            self.errors.pop(name).close()
        for name in [n for n in self.shapes if n not in records]:
            del self.shapes[name]
        for name in [n for n in self.windows if n not in records]:
            del self.windows[name]
        for tails in (self.traces, self.dlqs):
            for name in [n for n in tails if n not in records]:
                tails.pop(name).close()
        return records

    def _shape(self, rec: TopologyRecord) -> dict[str, Any]:
        key = (rec.version, repr(rec.debug))  # squall debug changes the shape's debug without a new version
        cached = self.shapes.get(rec.name)
        if cached is None or cached[0] != key:
            cached = self.shapes[rec.name] = (key, topology_shape(self.client, rec))
        return cached[1]

    def _board(self, name: str) -> StatsBoard:
        board = self.boards.get(name)
        if board is None:
            board = StatsBoard(self.client.bootstrap, name, self.client.kafka.get("consumer"))
            board.read_to_now(CATCH_UP_S)
            self.boards[name] = board
        else:
            board.poll(0)
        return board

    def _every_event(self) -> list[dict[str, Any]]:
        if self.events is None:
            events = EventLog(self.client.bootstrap, self.client.names, self.client.kafka.get("consumer"))

            def poll(timeout_s: float) -> int:
                got = events.poll(timeout_s)
                self._keep(got)
                return len(got)

            catch_up(poll, events.caught_up, self.client.names.events)
            self.events = events
        else:
            self._keep(self.events.poll(0))
        return self.every_event

    def _keep(self, events: list[dict[str, Any]]) -> None:
        for e in events:
            if e.get("topology") == SUPERVISORS_KEY:
                self.beats[str(e.get("supervisor"))] = e
            else:
                self.every_event.append(e)

    def _dead_letter_tail(self, name: str) -> DeadLetterTail | None:
        tail = self.dlqs.get(name)
        if tail is None:
            try:
                tail = DeadLetterTail(self.client.bootstrap, name, self.client.kafka.get("consumer"))
            except UsageError:
                return None  # no dead-letter topic (yet)
            catch_up(tail.poll, tail.caught_up, tail.topic)
            self.dlqs[name] = tail
        else:
            tail.poll(0)
        return tail

    def _reports(self, name: str) -> list[ErrorReport]:
        tail = self.errors.get(name)
        if tail is None:
            try:
                require_topic(self.client.bootstrap, errors_topic(name), name)
            except UsageError:
                return []  # submitted before Squall had an errors topic, or not started yet
            tail = ErrorTail(self.client.bootstrap, name, self.client.kafka.get("consumer"))
            catch_up(tail.poll, tail.caught_up, tail.topic)
            self.errors[name] = tail
        else:
            tail.poll(0)
        return tail.reports()
