"""``squall dlq``: list, show and replay a topology's dead letters (``squall.T.__dlq``).

A dead letter keeps its record's key and value untouched; its headers say where it was read
and why it died (:mod:`streams.wire.dead_letter`). ``show`` joins a dead letter with the error
report of its last tree (the report's ``roots`` hold the dead letter's ``squall.root``), so it
can say which component failed it and with what exception. ``replay`` writes chosen records
back to the topic and partition a spout read them from, as new deliveries.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from service.brokers.admin import require_topic
from service.control.log import TopicTail
from service.exceptions import BrokerError, UsageError
from streams.kafka.clients import at_high_watermarks, new_consumer, new_producer
from streams.monitoring.errors import ErrorReport
from streams.wire.dead_letter import read_dead_letter_headers
from streams.wire.naming import dead_letter_topic

_NAMED = re.compile(r"\[([^\]]+)\] ")
"""The component a fail op's words start with (:func:`streams.wire.acker.why_text`)."""

REPLAYED_FROM = "squall.replayed.from"
"""The header a replayed record carries: ``squall.T.__dlq@<offset>`` of its dead letter."""


@dataclass(frozen=True)
class DeadLetter:
    """One record of ``squall.T.__dlq``: its offset there, the original key and value, and the headers (without the ``squall.`` prefix)."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: dict[str, str]

    @property
    def component(self) -> str:
        """The component that gave up on the record and wrote the dead letter (a KafkaSpout, after its retries)."""
        return self.headers.get("component", "?")

    @property
    def failed_by(self) -> str:
        """The component that failed the record's last tree: the ``[component]`` that ``squall.why`` starts with (the fail op's words).

        The writer itself (:attr:`component`) for a poison record, or when nothing names
        another: a timeout names the spout whose tree no one acked in time.
        """
        m = _NAMED.match(self.headers.get("why", ""))
        return m.group(1) if m else self.component

    @property
    def cause(self) -> str:
        """``poison``, ``fail`` or ``timeout`` (a dead letter from before causes were recorded: ``?``)."""
        return self.headers.get("cause", "?")

    @property
    def source(self) -> tuple[str, int, int]:
        """Where it was read: ``(topic, partition, offset)``."""
        h = self.headers
        return h.get("topic", "?"), int(h.get("partition", -1)), int(h.get("offset", -1))

    @property
    def root(self) -> int | None:
        """The root id of its last tree (a spout's dead letter after failures), else None."""
        raw = self.headers.get("root")
        return int(raw) if raw else None

    @property
    def roots(self) -> list[int]:
        """The root ids of every tree of the record that failed, oldest first (else its last root, if any)."""
        raw = self.headers.get("roots")
        if raw:
            return [int(r) for r in raw.split(",") if r]
        return [] if self.root is None else [self.root]

    def line(self) -> str:
        """One line for ``squall dlq NAME list``: offset, when, the component that failed it, cause, attempts, source, the writer if another, reason."""
        topic, partition, offset = self.source
        last = self.headers.get("last.failure")
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(last))) if last else "-"
        attempts, why = self.headers.get("attempts", "?"), self.headers.get("error", "")
        by = self.failed_by
        writer = f" (dead-lettered by [{self.component}])" if by != self.component else ""
        return f"@{self.offset:<6} {when}  [{by}] {self.cause:<7} attempts {attempts:<2} {topic}[{partition}]@{offset}{writer}: {why}"


def read_dead_letters(bootstrap: str, topology: str, timeout_s: float = 60.0) -> list[DeadLetter]:
    """Every dead letter of ``topology``, in order.

    Raises UsageError naming the topology when it has no dead-letter topic on ``bootstrap``,
    BrokerError when the topic cannot be read to its end within ``timeout_s`` seconds.
    """
    topic = dead_letter_topic(topology)
    require_topic(bootstrap, topic, topology)
    c = new_consumer({"bootstrap.servers": bootstrap, "group.id": f"squall.{topology}.__dlq_reader", "enable.auto.commit": False, "log_level": 0})
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[DeadLetter] = []
        quiet, deadline = 0.0, time.monotonic() + timeout_s
        while True:
            msgs = c.consume(1000, 0.2)
            for m in msgs:
                if not m.error():
                    out.append(DeadLetter(m.offset() or 0, m.key(), m.value(), read_dead_letter_headers(m.headers())))
            quiet = 0.0 if msgs else quiet + 0.2
            if quiet >= 0.4 and at_high_watermarks(c, [TopicPartition(topic, 0)]):
                return out
            if time.monotonic() > deadline:
                raise BrokerError(f"[{topology}] {topic} not read to its end within {timeout_s} s")
    finally:
        c.close()


class DeadLetterTail(TopicTail):
    """A tail of ``squall.T.__dlq`` kept open (the UI's dead-letter page): the last :attr:`KEPT` dead letters, in order.

    Raises UsageError naming the topology when it has no dead-letter topic on ``bootstrap``.
    """

    KEPT = 1000
    """Dead letters kept in memory (the oldest go first; ``squall dlq list`` reads them all)."""

    def __init__(self, bootstrap: str, topology: str, overrides: dict[str, Any] | None = None) -> None:
        require_topic(bootstrap, dead_letter_topic(topology), topology)
        super().__init__(bootstrap, dead_letter_topic(topology), overrides)
        self.letters: list[DeadLetter] = []
        self.total = 0
        """Every dead letter read, the dropped ones too."""

    def poll(self, timeout_s: float = 0.0) -> int:
        """Read what arrived; returns how many records."""
        msgs = self._messages(timeout_s)
        for m in msgs:
            self.letters.append(DeadLetter(m.offset() or 0, m.key(), m.value(), read_dead_letter_headers(m.headers())))
        self.total += len(msgs)
        del self.letters[: max(0, len(self.letters) - self.KEPT)]
        return len(msgs)


def choose(letters: list[DeadLetter], offsets: Iterable[int] = (), component: str | None = None, cause: str | None = None) -> list[DeadLetter]:
    """The dead letters at ``offsets`` (all if none given) of ``component`` and ``cause`` (any if None).

    ``component`` matches the component that failed a record (:attr:`DeadLetter.failed_by`)
    or the one that wrote its dead letter (a spout).

    Raises UsageError naming an offset the topic does not hold.
    """
    wanted = set(offsets)
    missing = wanted - {d.offset for d in letters}
    if missing:
        raise UsageError(
            f"no dead letter at offset {min(missing)} (offsets {letters[0].offset}..{letters[-1].offset})" if letters else "the dead-letter topic is empty"
        )
    return [d for d in letters if (not wanted or d.offset in wanted) and component in (None, d.component, d.failed_by) and cause in (None, d.cause)]


def _reports_of(letter: DeadLetter, reports: list[ErrorReport]) -> list[ErrorReport]:
    """The reports of ``letter``'s record, oldest tree first (by ``squall.roots``; a poison record's by where it was read)."""
    roots = letter.roots
    if not roots:
        topic, partition, offset = letter.source
        where = f"{topic}[{partition}]@{offset}"
        return [r for r in reports if r.where == where and r.component == letter.component]
    order = {root: i for i, root in enumerate(roots)}
    return sorted((r for r in reports if order.keys() & set(r.roots)), key=lambda r: (max(order[x] for x in r.roots if x in order), bool(r.traceback)))


def explain(letter: DeadLetter, reports: list[ErrorReport]) -> ErrorReport | None:
    """The error report of ``letter``'s last failed tree that has one (``squall.roots``; the last root first), or None.

    None for a timeout or a silent fail (no component reported), a report the throttle
    dropped, or a dead letter without a root (a poison record: its own report is the one
    whose ``where`` is the letter's source).
    """
    found = _reports_of(letter, reports)  # the latest failed tree's report; of its reports, a full one (with its traceback)
    return found[-1] if found else None


def full_report(letter: DeadLetter, reports: list[ErrorReport]) -> ErrorReport | None:
    """The latest report of ``letter``'s record that kept its traceback, or None.

    Past ``topology.max.error.report.per.interval`` reports per
    ``topology.error.throttle.interval.secs``, an executor publishes brief reports, without
    the traceback (:mod:`streams.monitoring.errors`); a record that fails its six deliveries
    within one interval ends with brief ones, and an earlier delivery's report holds the
    traceback.
    """
    full = [r for r in _reports_of(letter, reports) if r.traceback]
    return full[-1] if full else None


def show_lines(letter: DeadLetter, report: ErrorReport | None, full: ErrorReport | None = None) -> list[str]:
    """What ``squall dlq NAME show`` prints for one dead letter: headers, the record, and why.

    ``report``: :func:`explain`'s; ``full``: :func:`full_report`'s, shown too when ``report``
    is a brief one (the error throttle kept its traceback out).
    """
    out = [f"dead letter @{letter.offset}"]
    out += [f"  {k:<14} {v}" for k, v in sorted(letter.headers.items())]
    for name, raw in (("key", letter.key), ("value", letter.value)):
        out.append(f"  {name:<14} {raw!r}" if raw is None or not _printable(raw) else f"  {name:<14} {raw.decode()}")
    if report is not None:
        out.append("  reported       " + report.line())
        out += ["    " + line for line in report.traceback.rstrip().splitlines()]
        if not report.traceback and report.cause == "exception":
            if full is not None and full is not report:
                out.append("  last full      " + full.line() + "  (an earlier delivery's report; the later ones came past the error throttle)")
                out += ["    " + line for line in full.traceback.rstrip().splitlines()]
            else:
                out.append(
                    "  traceback      none kept: every report of this record came past the error throttle "
                    "(topology.max.error.report.per.interval per topology.error.throttle.interval.secs), or its full one was compacted away"
                )
    elif letter.headers.get("why"):  # the fail op's words are above; no report holds a traceback
        out.append("  reported       nothing (a fail without a reason, a timeout, or a report the error throttle dropped)")
    elif letter.cause == "timeout":
        out.append("  why            its tree timed out (topology.message.timeout.secs): no component acked it in time")
    else:
        out.append("  why            no error report names it (failed without a reason, or the error throttle dropped the report)")
    return out


def _printable(raw: bytes) -> bool:
    try:
        return raw.decode().isprintable()
    except UnicodeDecodeError:
        return False


def replay(bootstrap: str, topology: str, letters: list[DeadLetter], spouts: set[str]) -> dict[str, int]:
    """Write each of ``letters`` back where its spout read it (same topic, partition, key, value); returns records per topic.

    Only records a spout read can come back: a dead letter written by a bolt, an acker or
    a sink (``spouts`` does not hold its component) is refused with UsageError naming it.
    Raises BrokerError if a record is not delivered.
    """
    refused = [d for d in letters if d.component not in spouts]
    if refused:
        d = refused[0]
        raise UsageError(
            f"[{topology}] dead letter @{d.offset} was written by [{d.component}], not by a spout ({', '.join(sorted(spouts))}): "
            "only records a spout read can be replayed"
        )
    producer = new_producer({"bootstrap.servers": bootstrap, "log_level": 0})
    errors: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    per_topic: dict[str, int] = {}
    for d in letters:
        topic, partition, _ = d.source
        headers = [(REPLAYED_FROM, f"{dead_letter_topic(topology)}@{d.offset}")]
        producer.produce(topic, d.value, d.key, partition, on_delivery=delivered, headers=headers)
        per_topic[topic] = per_topic.get(topic, 0) + 1
    left = producer.flush(30)
    if left or errors:
        raise BrokerError(f"[{topology}] {left + len(errors)} replayed records not delivered: {errors[:1] or 'flush timed out'}")
    return per_topic
