"""Aggregates executor stats snapshots read from ``squall.T.__metrics``."""

from __future__ import annotations

import json
import math
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from streams.naming import metrics_topic
from streams.stats import LogHistogram


class StatsBoard:
    """Latest snapshot per executor instance; totals sum over instances (a restarted
    executor is a new instance, so nothing it counted before a crash is lost)."""

    def __init__(self, bootstrap: str, topology: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"squall.{topology}.__board",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 50,
                "log_level": 0,
            }
        )
        self.consumer.assign([TopicPartition(metrics_topic(topology), 0, OFFSET_BEGINNING)])
        self.latest: dict[str, dict[str, Any]] = {}

    def poll(self, timeout: float = 0.0) -> int:
        n = 0
        for msg in self.consumer.consume(10000, timeout):
            value = msg.value()
            if msg.error() or value is None:
                continue
            try:
                snap = json.loads(value)
            except ValueError:
                continue
            self.latest[snap["instance"]] = snap
            n += 1
        return n

    def catch_up(self, quiet_s: float = 0.6, timeout_s: float = 10.0) -> None:
        """Poll until nothing new arrives for ``quiet_s`` seconds (or ``timeout_s`` passes)."""
        deadline = time.monotonic() + timeout_s
        quiet = 0.0
        while quiet < quiet_s and time.monotonic() < deadline:
            quiet = 0.0 if self.poll(0.2) else quiet + 0.2

    def live(self, now: float, fresh_s: float = 5.0) -> list[dict[str, Any]]:
        """Snapshots of executors that are running now (not final, recent)."""
        return [s for s in list(self.latest.values()) if not s.get("final") and now - float(s.get("time", 0.0)) <= fresh_s]

    def total(self, kind: str, counter: str) -> float:
        return float(sum(s["counters"].get(counter, 0) for s in self.latest.values() if s["kind"] == kind))

    def gauge(self, kind: str, gauge: str) -> float:
        return float(sum(s["gauges"].get(gauge, 0) for s in self.latest.values() if s["kind"] == kind and not s.get("final")))

    def hist(self, kind: str, name: str) -> LogHistogram:
        h = LogHistogram()
        for s in self.latest.values():
            if s["kind"] == kind and name in s["hists"]:
                h.merge(LogHistogram.from_json(s["hists"][name]))
        return h

    def quantile(self, kind: str, name: str, q: float) -> float:
        v = self.hist(kind, name).quantile(q)
        return v if not math.isnan(v) else 0.0

    def close(self) -> None:
        self.consumer.close()
