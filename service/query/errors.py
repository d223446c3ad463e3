"""``squall errors``: a topology's error reports, read from ``squall.T.__errors`` (Storm's ``get-errors``).

The reports are written by the executors (:mod:`streams.monitoring.errors`); this reads the
topic to its end, keeps the latest report per key (as compaction does) and prints them,
oldest first.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from service.brokers.admin import read_records, require_topic
from streams.monitoring.errors import ErrorReport, latest_reports
from streams.wire.naming import errors_topic


def read_errors(bootstrap: str, topology: str, component: str | None = None, timeout_s: float = 60.0) -> list[ErrorReport]:
    """The error reports of ``topology`` (of ``component``, if given), oldest first.

    Raises UsageError naming the topology when it has no errors topic on ``bootstrap``
    (it never ran there), BrokerError when the topic cannot be read to its end.
    """
    topic = errors_topic(topology)
    require_topic(bootstrap, topic, topology)
    return latest_reports(((k, v) for k, v in read_records(bootstrap, topic, timeout_s)), topic, component)


BRIEF_NOTE = "(a brief report, without its traceback: past topology.max.error.report.per.interval in its throttle window)"
"""What ``squall errors --traceback`` prints under an exception's report that has no traceback."""


def error_lines(reports: list[ErrorReport], limit: int, traceback: bool = False) -> list[str]:
    """The last ``limit`` reports as the lines ``squall errors`` prints (with their tracebacks, indented, when ``traceback``).

    An exception's brief report (published past ``topology.max.error.report.per.interval``,
    :mod:`streams.monitoring.errors`) has no traceback; with ``traceback`` it says so.
    """
    out: list[str] = []
    for r in reports[-limit:] if limit > 0 else []:
        out.append(r.line())
        if traceback and r.traceback:
            out.extend("    " + line for line in r.traceback.rstrip().splitlines())
        elif traceback and r.cause == "exception":
            out.append(f"    {BRIEF_NOTE}")
    return out


def errors_json(reports: list[ErrorReport], limit: int) -> str:
    """The last ``limit`` reports as a JSON array (``squall errors --json``; ``schemas/error.schema.json``)."""
    rows: list[dict[str, Any]] = [asdict(r) for r in (reports[-limit:] if limit > 0 else [])]
    return json.dumps(rows, indent=2)
