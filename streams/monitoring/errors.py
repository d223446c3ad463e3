"""Errors per component (Storm's ``reportError``, ``get-errors`` and the UI's component errors).

What a component reports, and why a tuple failed, travels to ``squall.T.__errors`` as an
:class:`ErrorReport` (``schemas/error.schema.json``): component, task, worker, host, pid, time,
the cause, the exception type, its message and traceback, and where the input came from.

Causes (:data:`ERROR_CAUSES`):

* ``exception``: ``execute`` raised (the tuple is failed and replayed), or the code called
  ``collector.report_error`` (Storm's ``reportError``);
* ``fail``: the bolt failed a tuple with a reason (``collector.fail(tuple, reason)``, or a
  ``FailedException("reason")``);
* ``poison``: an input record that does not decode (dead-lettered, never retried);
* ``fatal``: an error that stopped the executor (``next_tuple`` raised, say); the worker exits.

Every report is counted by cause and type (``squall_errors_by_type_total``); at most
``topology.max.error.report.per.interval`` reports per executor are published every
``topology.error.throttle.interval.secs`` (Storm's throttle, same keys and defaults) with their
traceback, and past that up to ``squall.errors.brief.per.interval`` more without it (so that a
dead letter can still be explained); the rest are only counted. The topic is compacted on
``component/task/slot`` keys, ``slot`` cycling through ``squall.errors.kept.per.task`` (and
``b0``.. for the brief ones, as many as the brief cap), so it keeps a bounded number per task.
"""

from __future__ import annotations

import json
import socket
import time
import traceback as tb
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields
from typing import Any

from streams.exceptions import DecodeError

ERROR_CAUSES = ("exception", "fail", "poison", "fatal")
"""Why a report was made (see the module docstring)."""

MAX_TRACEBACK_CHARS = 8_000
"""A traceback longer than this keeps its last characters (where the exception was raised)."""

MAX_MESSAGE_CHARS = 2_000

HOST = socket.gethostname()


@dataclass(frozen=True, slots=True)
class ErrorReport:
    """One error of one task (a record of ``squall.T.__errors``; ``schemas/error.schema.json``).

    Attributes:
      topology, component: where it happened; task: the global task id (-1: the executor's, no task).
      worker, host, pid: the worker process.
      at: wall-clock seconds.
      cause: one of :data:`ERROR_CAUSES`.
      type: the exception's class name (``Fail`` for a fail with a reason).
      message: the exception's message or the fail's reason.
      traceback: the formatted traceback ("" for a fail or a poison record).
      where: the input record, ``topic[partition]@offset`` ("" for none).
      roots: the root ids of the input tuple's trees (a dead letter's ``squall.root`` header
        names the last tree of its record: ``squall dlq NAME show`` joins them).
    """

    topology: str
    component: str
    task: int
    worker: str
    host: str
    pid: int
    at: float
    cause: str
    type: str
    message: str
    traceback: str
    where: str
    roots: tuple[int, ...] = ()

    def key(self, slot: int | str) -> bytes:
        """The record key: ``component/task/slot`` (compaction keeps the latest report per key; brief reports' slots are ``b0``, ``b1``, ...)."""
        return f"{self.component}/{self.task}/{slot}".encode()

    def encode(self) -> bytes:
        """The record value (JSON)."""
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes | None, *, topic: str, partition: int, offset: int) -> ErrorReport:
        """The report in a record value. Raises DecodeError naming the topic, partition and offset."""
        try:
            d = json.loads(raw or b"null")
            if not isinstance(d, dict):
                raise ValueError("not an object")
            report = cls(**{k: d[k] for k in FIELDS if k != "roots"}, roots=tuple(int(r) for r in d.get("roots", ())))
            if report.cause not in ERROR_CAUSES:
                raise ValueError(f"unknown cause {report.cause!r}")
            return report
        except (ValueError, KeyError, TypeError) as exc:
            raise DecodeError(f"not an error report: {exc}", component="__errors", topic=topic, partition=partition, offset=offset) from exc

    def line(self) -> str:
        """One line: time, component, task, type and message (``squall status``)."""
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.at))
        where = f" on {self.where}" if self.where else ""
        return f"{stamp} [{self.component}] task {self.task} ({self.worker}@{self.host}) {self.cause} {self.type}: {self.message}{where}"


FIELDS = tuple(f.name for f in fields(ErrorReport))


class ErrorThrottle:
    """At most ``max_per_interval`` reports per ``interval_s`` (Storm's ``topology.error.throttle.interval.secs``).

    Fixed windows on an injected monotonic ``clock`` (seconds); ``suppressed`` counts what
    was refused.
    """

    def __init__(self, interval_s: float, max_per_interval: int, clock: Callable[[], float]) -> None:
        self.interval_s = interval_s
        self.max_per_interval = max_per_interval
        self.clock = clock
        self.window_start = float("-inf")
        self.in_window = 0
        self.suppressed = 0

    def allow(self) -> bool:
        """True if one more report may be published now."""
        now = self.clock()
        if now - self.window_start >= self.interval_s:
            self.window_start, self.in_window = now, 0
        if self.in_window >= self.max_per_interval:
            self.suppressed += 1
            return False
        self.in_window += 1
        return True


class ErrorLog:
    """An executor's errors: counted by cause and type, published through a throttle.

    Args:
      topology, component, worker: the executor's.
      throttle: :class:`ErrorThrottle`.
      publish: ``publish(key, value)`` writes one record to ``squall.T.__errors``.
      kept_per_task: slots per task (``squall.errors.kept.per.task``).
      wall: the wall clock (seconds); pid: the process id.
      brief: past ``throttle``, reports without a traceback are still published through this
        one (``squall.errors.brief.per.interval``), in a ring of ``brief_kept`` slots per task,
        so that ``squall dlq NAME show`` can still say why a record died; None: none.
    """

    def __init__(
        self,
        topology: str,
        component: str,
        worker: str,
        throttle: ErrorThrottle,
        publish: Callable[[bytes, bytes], None],
        kept_per_task: int,
        wall: Callable[[], float],
        pid: int,
        brief: ErrorThrottle | None = None,
        brief_kept: int = 100,
    ) -> None:
        self.topology = topology
        self.component = component
        self.worker = worker
        self.throttle = throttle
        self.publish = publish
        self.kept_per_task = max(1, kept_per_task)
        self.wall = wall
        self.pid = pid
        self.counts: dict[str, dict[str, int]] = {}
        """``cause -> exception type -> reports`` (every report, published or not)."""
        self.brief = brief
        self.brief_kept = max(1, brief_kept)
        self.next_slot: dict[tuple[str, int], int] = {}

    def report(
        self, cause: str, task: int, *, exc: BaseException | None = None, message: str = "", type_name: str = "", where: str = "", roots: Iterable[int] = ()
    ) -> ErrorReport | None:
        """Count one error; publish it unless throttled. Returns what was published (None: throttled).

        ``exc``: the exception (its type, message and traceback); otherwise ``type_name`` and
        ``message`` (a fail's reason, say).
        """
        if cause not in ERROR_CAUSES:
            raise ValueError(f"[{self.component}] unknown error cause {cause!r}")
        if exc is not None:
            type_name = type(exc).__name__
            message = message or str(exc)
        type_name = type_name or "Error"
        by_type = self.counts.setdefault(cause, {})
        by_type[type_name] = by_type.get(type_name, 0) + 1
        if self.throttle.allow():
            trace = "".join(tb.format_exception(exc))[-MAX_TRACEBACK_CHARS:] if exc is not None else ""
            ring, slots = "", self.kept_per_task
        elif self.brief is not None and self.brief.allow():
            trace, ring, slots = "", "b", self.brief_kept
        else:
            return None
        report = ErrorReport(
            self.topology,
            self.component,
            task,
            self.worker,
            HOST,
            self.pid,
            self.wall(),
            cause,
            type_name,
            message[:MAX_MESSAGE_CHARS],
            trace,
            where,
            tuple(roots),
        )
        slot = self.next_slot.get((ring, task), 0)
        self.next_slot[(ring, task)] = (slot + 1) % slots
        self.publish(report.key(f"{ring}{slot}"), report.encode())
        return report


def latest_reports(records: Iterable[tuple[bytes | None, bytes | None]], topic: str, component: str | None = None) -> list[ErrorReport]:
    """The reports in ``(key, value)`` records of ``topic``, the latest per key (as compaction keeps them), oldest first.

    ``component``: only its reports. A record that is not a report is skipped.
    """
    by_key: dict[bytes | None, ErrorReport] = {}
    for offset, (key, value) in enumerate(records):
        try:
            report = ErrorReport.decode(value, topic=topic, partition=0, offset=offset)
        except DecodeError:
            continue
        if component is None or report.component == component:
            by_key[key] = report
    return sorted(by_key.values(), key=lambda r: r.at)


def merge_counts(into: dict[str, dict[str, int]], counts: dict[str, Any]) -> None:
    """Add ``cause -> type -> n`` counts (a stats snapshot's ``errors``) into ``into``."""
    for cause, by_type in counts.items():
        mine = into.setdefault(cause, {})
        for type_name, n in by_type.items():
            mine[type_name] = mine.get(type_name, 0) + int(n)
