"""Prometheus exposition of executor stats, on a registry that is passed in.

Stats are plain counters on the hot path (:class:`streams.stats.ExecutorStats`); this
collector turns them into metric families at scrape time, so per-tuple cost is nil.
Every family is labelled ``topology``, ``component``, ``kind`` (spout/bolt/acker/spark), ``worker``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from streams.stats import ExecutorStats, LogHistogram

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
LABELS = ["topology", "component", "kind", "worker"]

COUNTERS = {
    "emitted": "Tuples emitted",
    "acked": "Trees acked (spout) or input tuples acked (bolt)",
    "failed": "Trees failed (spout) or input tuples failed (bolt)",
    "replayed": "Source records replayed after a fail or timeout",
    "timeouts": "Trees failed by the spout's own timeout",
    "dead_lettered": "Records written to the dead-letter topic",
    "poison": "Records that could not be decoded",
    "executed": "Tuples executed",
    "errors": "Exceptions raised by user code",
    "ops": "Acker ops applied",
    "complete": "Trees completed by the acker",
    "fail": "Trees failed by an explicit fail (acker)",
    "timeout": "Trees timed out in the acker",
    "late": "Messages for already expired trees (acker)",
    "orphaned": "Trees that ended without an init (acker)",
    "ignored_results": "Ack results for roots the spout no longer tracks (duplicates)",
    "acker_ops": "Acker ops sent",
    "spark_batches": "Spark micro-batches run (SparkBolt)",
    "spark_input_rows": "Rows read by a SparkBolt's micro-batches",
    "state_keys_written": "Committer state keys written at a new txid (SparkBolt)",
    "state_keys_skipped": "Committer state keys skipped: their txid was already applied (SparkBolt)",
}
HISTS = {
    "complete_latency": "Spout emit to tree completion",
    "execute_latency": "Bolt execute() time per tuple",
    "spark_batch_duration": "SparkBolt micro-batch duration (trigger execution)",
}


def _buckets(h: LogHistogram) -> list[tuple[str, float]]:
    out = []
    items = sorted(h.counts.items())
    for bound in BUCKETS:
        out.append((repr(bound), float(sum(c for i, c in items if h.upper_bound(i) <= bound))))
    out.append(("+Inf", float(h.count)))
    return out


class StatsCollector(Collector):
    """Yields ``squall_*`` families from the executors ``source()`` returns."""

    def __init__(self, source: Callable[[], Iterable[ExecutorStats]]) -> None:
        self.source = source

    def collect(self) -> Iterable[Metric]:
        stats = list(self.source())
        counters = {k: CounterMetricFamily(f"squall_{k}", v, labels=LABELS) for k, v in COUNTERS.items()}
        pending = GaugeMetricFamily("squall_pending", "Trees in flight (spout) or pending in the ledger (acker)", labels=LABELS)
        lag = GaugeMetricFamily("squall_lag", "Source records not yet committed, per partition", labels=[*LABELS, "partition"])
        hists: dict[str, HistogramMetricFamily] = {k: HistogramMetricFamily(f"squall_{k}_seconds", v, labels=LABELS) for k, v in HISTS.items()}
        for s in stats:
            labels = [s.topology, s.component, s.kind, s.worker]
            for k, fam in counters.items():
                if k in s.counters:
                    fam.add_metric(labels, s.counters[k])
            if "pending" in s.gauges:
                pending.add_metric(labels, s.gauges["pending"])
            for part, value in s.partition_lag.items():
                lag.add_metric([*labels, part], value)
            for k, hfam in hists.items():
                h = s.hists.get(k)
                if h is not None:
                    hfam.add_metric(labels, _buckets(h), h.total)
        yield from counters.values()
        yield pending
        yield lag
        yield from hists.values()


def merge_snapshots(snapshots: Iterable[dict[str, Any]]) -> list[ExecutorStats]:
    """Stats snapshots (``schemas/stats.schema.json``) folded into one :class:`ExecutorStats`
    per ``(topology, component, kind, worker)``: counters and gauges add up, histograms
    merge, lag is per partition. A supervisor exposes its workers' executors this way."""
    out: dict[tuple[str, str, str, str], ExecutorStats] = {}
    for snap in snapshots:
        key = (snap["topology"], snap["component"], snap["kind"], snap["worker"])
        s = out.get(key)
        if s is None:
            s = out[key] = ExecutorStats(*key)
        for k, v in snap.get("counters", {}).items():
            s.inc(k, v)
        for k, v in snap.get("gauges", {}).items():
            s.gauges[k] = s.gauges.get(k, 0.0) + v
        for k, h in snap.get("hists", {}).items():
            s.hist(k).merge(LogHistogram.from_json(h))
        s.partition_lag.update(snap.get("lag", {}))
    return list(out.values())


def serve(registry: CollectorRegistry, port: int, host: str = "127.0.0.1") -> None:
    """Expose ``registry`` on ``http://host:port/metrics`` (127.0.0.1 unless configured)."""
    start_http_server(port, addr=host, registry=registry)
