"""A topology's status as :class:`service.query.live.LiveStatus` answers it, and a stand-in LiveStatus, for the UI's unit tests."""

from __future__ import annotations

from typing import Any

from service.exceptions import ControlError
from service.query.dlq import DeadLetter
from service.query.windows import WINDOWS
from streams.monitoring.errors import ErrorReport
from streams.monitoring.trace import TraceEvent

NOW = 10_000.0


def component(kind: str, **over: Any) -> dict[str, Any]:
    c: dict[str, Any] = {
        "kind": kind,
        "executors": 1,
        "tasks": 2,
        "emitted": 100,
        "transferred": 100,
        "executed": 0 if kind == "spout" else 100,
        "acked": 100,
        "failed": 0,
        "capacity": 0.1,
        "lag": 0,
        "lag_partitions": {},
        "last_error": None,
        "held_back_s": 0.0,
        "execute_latency_avg_s": 0.001,
        "process_latency_avg_s": 0.002,
        "complete_latency_avg_s": 0.01 if kind == "spout" else None,
        "executor_stats": [
            {
                "instance": f"{kind}-1",
                "worker": "w0",
                "pid": 42,
                "tasks": [0, 1],
                "emitted": 100,
                "transferred": 100,
                "executed": 100,
                "acked": 100,
                "failed": 0,
                "capacity": 0.1,
                "execute_latency_avg_s": 0.001,
                "process_latency_avg_s": 0.002,
                "complete_latency_avg_s": None,
                "lag": {"squall.wc.lines[0]": 3, "squall.wc.lines[1]": 4},
            }
        ],
    }
    c.update(over)
    return c


def status(name: str = "wc", **over: Any) -> dict[str, Any]:
    comps = {"lines": component("spout", lag_partitions={"squall.wc.lines[0]": 3}), "split": component("bolt"), "count": component("bolt", capacity=0.93)}
    st: dict[str, Any] = {
        "name": name,
        "status": "ACTIVE",
        "uptime_s": 3725.0,
        "workers": 2,
        "pending": 5,
        "message_timeout_secs": 30,
        "debug": True,
        "sampling_pct": 1.0,
        "components": comps,
        "configuration": {"topology.workers": 2, "topology.message.timeout.secs": 30},
        "configuration_sources": {"topology.workers": "topology", "topology.message.timeout.secs": "default"},
        "component_configuration": {"count": {"topology.tick.tuple.freq.secs": 1}},
        "actions": [{"action": "deactivate", "detail": "", "who": "ann (ui, 127.0.0.1)", "at": NOW - 60}],
        "windows": {
            key: {
                "label": label,
                "seconds": seconds,
                "since": NOW - 600 if seconds else 0.0,
                "partial": bool(seconds and seconds > 600),
                "components": {c: {"emitted": 60.0, "transferred": 60.0, "acked": 60.0, "failed": 0.0, "executed": 60.0} for c in comps},
            }
            for key, label, seconds in WINDOWS
        },
    }
    st.update(over)
    return st


SHAPE = {
    "inputs": {
        "lines": [],
        "split": [{"component": "lines", "stream": "default", "grouping": "shuffle", "fields": []}],
        "count": [{"component": "split", "stream": "default", "grouping": "fields", "fields": ["word"]}],
    }
}


def report(comp: str = "split") -> ErrorReport:
    return ErrorReport("wc", comp, 0, "w0", "h1", 42, NOW - 5, "exception", "ValueError", "bad <line>", "Traceback (most recent call last):\n  ...", "t[0]@1")


def tree() -> dict[int, list[TraceEvent]]:
    root = 0xAB
    return {
        root: [
            TraceEvent(root, "emit", "lines", 0, "w0", NOW, 11, "split"),
            TraceEvent(root, "receive", "split", 1, "w0", NOW + 0.1, 11),
            TraceEvent(root, "timeout", "__acker", 0, "w1", NOW + 30.0),
        ]
    }


class FakeLive:
    """The methods of LiveStatus the UI calls, over fixed data."""

    def __init__(self) -> None:
        self.own_writes = 0
        """Calls of :meth:`read_own_write`: the UI reads the control log to its end after an action that wrote to it."""
        self.st = status()
        self.letters = [
            DeadLetter(
                7,
                b"k",
                b"line <7>",
                {"component": "lines", "cause": "fail", "why": "[split] boom", "topic": "squall.wc.lines", "partition": "0", "offset": "3"},
            )
        ]

    def read_own_write(self, timeout_s: float = 5.0) -> None:
        self.own_writes += 1

    def rows(self) -> list[dict[str, Any]]:
        return [{"name": "wc", "status": "ACTIVE", "uptime_s": 61.0, "workers": 2, "executors": 3, "tasks": 6}]

    def supervisors(self) -> list[dict[str, Any]]:
        return [{"supervisor": "s1", "host": "h1", "http": "127.0.0.1:9470", "started_at": NOW - 100, "slots": 32, "workers": 2, "version": "squall 0.1.0"}]

    def status(self, name: str) -> dict[str, Any]:
        if name != "wc":
            raise ControlError(f"[{name}] no such topology (see: squall list)")
        return self.st

    def shape(self, name: str) -> dict[str, Any]:
        return SHAPE

    def error_reports(self, name: str) -> list[ErrorReport]:
        return [report()]

    def log_links(self, name: str) -> dict[str, str]:
        return {"w0": "http://127.0.0.1:9470/logs/wc/0"}

    def trees(self, name: str) -> dict[int, list[TraceEvent]]:
        return tree()

    def dead_letters(self, name: str) -> tuple[list[DeadLetter], int]:
        return self.letters, 1
