"""Aggregates executor stats snapshots read from ``squall.T.__metrics``, and spout task ledgers read from ``squall.T.__ledger`` (the durable spout totals)."""

from __future__ import annotations

import json
import math
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from streams.exceptions import DecodeError
from streams.kafka.clients import at_high_watermarks, new_consumer, reopen_consumer, true_end_offsets
from streams.monitoring.errors import merge_counts
from streams.monitoring.ledger_store import TAIL, parse_ledger
from streams.monitoring.spout_ledger import TaskLedger
from streams.monitoring.stats import LogHistogram
from streams.wire.naming import ledger_topic, metrics_topic

LEDGER_TOTALS = frozenset(("emitted", "acked", "failed", "timeouts", "replayed", "replayed_fail", "replayed_timeout", "replayed_restart"))
"""Spout counters whose totals come from the ledgers (they survive a ``kill -9``)."""


class StatsBoard:
    """Latest snapshot per executor instance, and latest ledger per spout task.

    Spout totals in :data:`LEDGER_TOTALS` sum the ledgers (cumulative over each task's
    lives, written every flush); other totals sum the instances' snapshots (a restarted
    executor is a new instance; a ``kill -9`` loses its last stats interval).

    Args:
      bootstrap: ``bootstrap.servers``; topology: the topology name.
      overrides: consumer settings (security settings included).
    """

    def __init__(self, bootstrap: str, topology: str, overrides: dict[str, Any] | None = None) -> None:
        self.bootstrap = bootstrap
        self.overrides = overrides
        self.config: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": f"squall.{topology}.__board",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
            "log_level": 0,
            **(overrides or {}),
        }
        self.consumer = new_consumer(self.config)
        self.metrics_topic = metrics_topic(topology)
        self.ledger_topic = ledger_topic(topology)
        self.latest: dict[str, dict[str, Any]] = {}
        self.ledgers: dict[int, TaskLedger] = {}
        assignment = [TopicPartition(self.metrics_topic, 0, OFFSET_BEGINNING)]
        assignment += [TopicPartition(self.ledger_topic, p, off) for p, off in self._ledger_starts(bootstrap, overrides).items()]
        self.starts = {(tp.topic, tp.partition): tp.offset for tp in assignment}
        """Where each assigned partition was first read from (a reopened consumer resumes where the old one was)."""
        self.consumer.assign(assignment)

    def _ledger_starts(self, bootstrap: str, overrides: dict[str, Any] | None) -> dict[int, int]:
        """Where to read each ledger partition from: its last :data:`TAIL` records."""
        try:
            meta = self.consumer.list_topics(self.ledger_topic, timeout=10).topics.get(self.ledger_topic)
        except KafkaException:
            return {}
        if meta is None or meta.error is not None or not meta.partitions:
            return {}
        tps = [(self.ledger_topic, p) for p in sorted(meta.partitions)]
        try:
            ends = true_end_offsets(bootstrap, tps, component="board", overrides=overrides)
        except TimeoutError:
            return {p: OFFSET_BEGINNING for _, p in tps}
        return {p: max(0, end - TAIL) for (_, p), end in ends.items()}

    def poll(self, timeout: float = 0.0) -> int:
        """Read what arrived within ``timeout`` seconds (stats snapshots, ledgers); returns how many records."""
        n = 0
        for msg in self.consumer.consume(10000, timeout):
            value = msg.value()
            if msg.error() or value is None:
                continue
            if msg.topic() == self.ledger_topic:
                try:
                    ledger = parse_ledger(value, component="board", topic=self.ledger_topic, partition=msg.partition() or 0, offset=msg.offset() or 0)
                except DecodeError:
                    continue
                if ledger.newer_than(self.ledgers.get(ledger.task_id)):
                    self.ledgers[ledger.task_id] = ledger
                n += 1
                continue
            try:
                snap = json.loads(value)
            except ValueError:
                continue
            self.latest[snap["instance"]] = snap
            n += 1
        return n

    def catch_up(self, quiet_s: float = 0.6, timeout_s: float = 10.0) -> None:
        """Poll until every assigned partition is read to its high watermark, then quiet.

        The watermark is known from a Fetch response; quiet means nothing new for ``quiet_s``
        seconds. Gives up after ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        quiet = 0.0
        while time.monotonic() < deadline:
            quiet = 0.0 if self.poll(0.2) else quiet + 0.2
            if quiet >= quiet_s and at_high_watermarks(self.consumer, self.consumer.assignment()):
                return

    def read_to_now(self, timeout_s: float = 10.0) -> bool:
        """Read every assigned partition up to its end as of this call (high watermarks from a Fetch, taken first).

        Unlike :meth:`catch_up` it needs no quiet moment, which a running topology (every
        executor publishing every interval) never gives: ``squall status`` took 14-25 s. Returns
        False if ``timeout_s`` passed first.
        """
        tps = self.consumer.assignment()
        try:
            ends = true_end_offsets(self.bootstrap, [(tp.topic, tp.partition) for tp in tps], timeout_s, component="board", overrides=self.overrides)
        except TimeoutError:
            return False
        deadline = time.monotonic() + timeout_s
        while True:
            self.poll(0.1)
            behind = [
                tp
                for tp, pos in zip(tps, self.consumer.position(tps), strict=True)
                if ends[(tp.topic, tp.partition)] > max(pos.offset, self.consumer.get_watermark_offsets(tp, cached=True)[0] or 0)
            ]
            if not behind:
                return True
            if time.monotonic() > deadline:
                return False

    def read_to_now_or_reopen(self, timeout_s: float = 10.0) -> bool:
        """:meth:`read_to_now`; if that times out, replace the consumer (at the offsets it had reached) and try once more.

        On Apache Kafka 4.4 an assign-only consumer sometimes fetches nothing, for good, after a
        10 s broker pause (as the executors' consumers did; :func:`~streams.kafka.clients.reopen_consumer`):
        ``squall run``'s summary then showed the counters from before the pause.
        """
        if self.read_to_now(timeout_s):
            return True
        tps = self.consumer.assignment()
        positions = [
            TopicPartition(tp.topic, tp.partition, pos.offset if pos.offset >= 0 else self.starts[(tp.topic, tp.partition)])
            for tp, pos in zip(tps, self.consumer.position(tps), strict=True)
        ]
        self.consumer = reopen_consumer(self.consumer, self.config, positions, "board", why=f"stats not read to their end within {timeout_s:.0f} s")
        return self.read_to_now(timeout_s)

    def live(self, now: float, fresh_s: float = 5.0) -> list[dict[str, Any]]:
        """Snapshots of executors that are running now (not final, recent)."""
        return [s for s in list(self.latest.values()) if not s.get("final") and now - float(s.get("time", 0.0)) <= fresh_s]

    def total(self, kind: str, counter: str, component: str | None = None) -> float:
        """``counter`` summed over ``kind``'s executors (of ``component``, if given); for spouts and :data:`LEDGER_TOTALS`, over the spout tasks' ledgers."""
        if kind == "spout" and counter in LEDGER_TOTALS and self.ledgers:
            return float(sum(led.totals()[counter] for led in self.ledgers.values() if component in (None, led.component)))
        return float(sum(s["counters"].get(counter, 0) for s in self.latest.values() if s["kind"] == kind and component in (None, s["component"])))

    def errors(self, component: str | None = None) -> dict[str, dict[str, int]]:
        """Errors reported (``cause -> exception type -> count``), summed over the executors (of ``component``, if given)."""
        out: dict[str, dict[str, int]] = {}
        for s in self.latest.values():
            if component in (None, s["component"]):
                merge_counts(out, s.get("errors", {}))
        return out

    def gauge(self, kind: str, gauge: str) -> float:
        """``gauge`` summed over ``kind``'s live executors (final snapshots left out)."""
        return float(sum(s["gauges"].get(gauge, 0) for s in self.latest.values() if s["kind"] == kind and not s.get("final")))

    def per_worker(self, gauge: str) -> dict[str, float]:
        """A process gauge (``process_gc_seconds``, ``process_cpu_seconds``) per worker, the largest seen: each executor's snapshot carries its process's."""
        out: dict[str, float] = {}
        for s in self.latest.values():
            if gauge in s["gauges"]:
                out[s["worker"]] = max(out.get(s["worker"], 0.0), float(s["gauges"][gauge]))
        return dict(sorted(out.items()))

    def hist(self, kind: str, name: str, component: str | None = None) -> LogHistogram:
        """Histogram ``name`` merged over ``kind``'s executors (of ``component``, if given)."""
        h = LogHistogram()
        for s in self.latest.values():
            if s["kind"] == kind and name in s["hists"] and component in (None, s["component"]):
                h.merge(LogHistogram.from_json(s["hists"][name]))
        return h

    def quantile(self, kind: str, name: str, q: float) -> float:
        """The ``q`` quantile (0..1, seconds) of ``kind``'s histogram ``name``; 0 when it is empty."""
        v = self.hist(kind, name).quantile(q)
        return v if not math.isnan(v) else 0.0

    def close(self) -> None:
        """Close the stats consumer."""
        self.consumer.close()
