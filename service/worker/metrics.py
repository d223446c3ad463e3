"""Prometheus exposition of executor stats, on a registry that is passed in.

Stats are plain counters on the hot path (:class:`streams.monitoring.stats.ExecutorStats`); this
collector turns them into metric families at scrape time, so per-tuple cost is nil.
Every family is labelled ``topology``, ``component``, ``kind`` (spout/bolt/acker/spark), ``worker``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from typing_extensions import override

from streams.monitoring.bolt_progress import REEXECUTION_CAUSES
from streams.monitoring.errors import merge_counts
from streams.monitoring.spout_ledger import REPLAY_CAUSES
from streams.monitoring.stats import ExecutorStats, LogHistogram, process_usage


def _bounds() -> tuple[float, ...]:
    """Latency bucket upper bounds (seconds).

    1 ms to 5 minutes, ten per decade (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 7.5 x 10^k), so
    ``histogram_quantile``'s linear interpolation inside a bucket is off by at most about a
    quarter of the value, from a millisecond to past the message timeout.
    """
    steps = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.5)
    out = [round(m * 10.0**e, 6) for e in range(-3, 3) for m in steps]
    return (*(b for b in out if b < 300.0), 300.0)


BUCKETS = _bounds()
LABELS = ["topology", "component", "kind", "worker"]

COUNTERS = {
    "emitted": "Tuples emitted (emit calls; Storm UI's emitted)",
    "transferred": "Tuples sent to tasks: an emit to N tasks counts N (Storm UI's transferred)",
    "acked": "Message ids whose trees were acked (spout; a tree of several records counts each) or input tuples acked (bolt)",
    "failed": "Message ids whose trees failed (spout) or input tuples failed (bolt)",
    "held_back_seconds": "Seconds a spout spent at its bound on trees in flight (backpressure: the topology downstream sets the pace)",
    "replayed": "Tuples a spout emitted again for a message id already emitted (all causes; by cause: squall_replays_total)",
    "timeouts": "Message ids whose trees the spout's own timeout failed",
    "dead_lettered": "Records written to the dead-letter topic",
    "poison": "Records that could not be decoded",
    "resumed_finished": "Records above a spout task's committed offset that an earlier life of the task had finished: taken as done, not replayed "
    "(its ledger's finished ranges; streams.wire.commits.finished_from)",
    "executed": "Tuples executed",
    "errors": "Exceptions raised by user code",
    "trace_events": "Events of sampled trees published to squall.T.__trace (topology.debug)",
    "diagnostics_lost": "Error reports and trace records the broker did not take (they never fail a tree)",
    "ops": "Acker ops applied",
    "complete": "Trees completed by the acker",
    "fail": "Trees failed by an explicit fail (acker)",
    "timeout": "Trees timed out in the acker",
    "late": "Messages for already expired trees (acker)",
    "orphaned": "Trees that ended without an init (acker)",
    "duplicate_inits": "Inits ignored because their tree already had one: a record written twice (acker; 0 with idempotent producers)",
    "ignored_results": "Ack results for roots the spout no longer tracks (duplicates)",
    "acker_ops": "Acker ops sent",
    "produced_bytes": "Bytes of record keys and values an executor handed to its producer (before batching, compression and replication)",
    "purged_records": "Records of the executor's input deleted (DeleteRecords) after its group committed them",
    "refetched": "Fetches of an internal topic sent again because a fetch skipped offsets (the records are read, not lost; streams.kafka.fetch_gaps)",
    "consumer_reopens": "Consumers an executor replaced because their offset commits failed for squall.consumer.reopen.after.secs "
    "(a group coordinator lost for good; streams.kafka.commit_watch)",
    "lease_pauses": "Times an executor held its loop because its worker's lease lapsed (no stats snapshot confirmed for 3 s; streams.runtime.lease)",
    "lease_paused_seconds": "Seconds an executor held its loop without its worker's lease",
    "fenced_tuples": "Tuples dropped because an older owner of their sending task wrote them after a newer one did "
    "(a replaced worker's late write; their trees failed; streams.runtime.fencing)",
    "fenced_acker_records": "Acker records dropped because an older owner of their sender flushed them after a newer one did (streams.runtime.fencing)",
    "fenced_acker_ops": "Acker ops in fenced acker records",
    "fenced_commits": "Input or source offsets a bolt, spout or acker task found moved back by a replaced owner's late commit, and started past"
    " (streams.wire.commits)",
    "batches_emitted": "Batches a transactional spout emitted (first attempts and replays)",
    "batches_replayed": "Batches a transactional spout emitted again (a failure, a timeout, a restart)",
    "batches_committed": "Batches committed, in txid order",
    "records_committed": "Source records in committed batches",
    "spark_batches": "Spark micro-batches run (SparkBolt)",
    "spark_input_rows": "Rows read by a SparkBolt's micro-batches",
    "state_keys_written": "Committer state keys written at a new txid (SparkBolt)",
    "state_keys_skipped": "Committer state keys skipped: their txid was already applied (SparkBolt)",
}
RESERVED = frozenset(
    {
        "errors_by_type",
        "reexecutions",
        "replays",
        "pending",
        "pending_limit",
        "capacity",
        "tasks",
        "batch_last_txid",
        "lag",
        "worker_cpu_seconds",
        "worker_gc_seconds",
        "supervisor_cpu_seconds",
    }
)
"""Family names the collector builds itself: a registered metric by one of these names is not exported (it would clash)."""

PROCESS_GAUGES = ("process_cpu_seconds", "process_rss_bytes", "process_gc_seconds")
"""The worker process's gauges, in every executor's snapshot (streams.runtime.executor): exported once per worker, the largest value seen."""

KIND_COUNTERS = {
    "spout": (
        "held_back_seconds",
        "emitted",
        "transferred",
        "acked",
        "failed",
        "replayed",
        "timeouts",
        "dead_lettered",
        "poison",
        "resumed_finished",
        "acker_ops",
        "ignored_results",
        "refetched",
        "consumer_reopens",
        "produced_bytes",
        "purged_records",
    ),
    "bolt": (
        "emitted",
        "transferred",
        "executed",
        "acked",
        "failed",
        "errors",
        "dead_lettered",
        "poison",
        "acker_ops",
        "refetched",
        "consumer_reopens",
        "produced_bytes",
        "purged_records",
    ),
    "acker": (
        "ops",
        "complete",
        "fail",
        "timeout",
        "late",
        "orphaned",
        "duplicate_inits",
        "poison",
        "dead_lettered",
        "refetched",
        "consumer_reopens",
        "produced_bytes",
        "purged_records",
    ),
    "spark": ("spark_batches", "spark_input_rows"),
}
"""Counters every executor of a kind exports from its start (0 until they move), so rates
and alerts have a series before the first event."""

HISTS = {
    "complete_latency": "Spout emit to tree completion (Storm UI's complete latency)",
    "execute_latency": "Bolt execute() time per tuple (Storm UI's execute latency)",
    "process_latency": "Bolt receipt of a tuple to its ack (Storm UI's process latency)",
    "spark_batch_duration": "SparkBolt micro-batch duration (trigger execution)",
    "batch_save_latency": "Transactional spout: one write of the coordinator's state and the broker's confirmation",
    "batch_emit_latency": "Transactional spout: reading a batch's records and emitting them with its end markers",
    "batch_process_latency": "Transactional spout: a batch's emit to its tree's ack (processing in every bolt)",
    "batch_commit_wait_latency": "Transactional spout: a processed batch waiting for the batches before it to commit",
    "batch_commit_latency": "Transactional spout: a batch's commit tuple to its commit tree's ack (the committers' state transactions)",
    "finish_batch_latency": "A bolt of a transactional topology: finish_batch and its end markers per batch and task (a committer's state transaction)",
    "transit_latency": "One hop: the producer's timestamp of an input record to its receipt (flush wait + broker + fetch wait; "
    "bolts sample 1 in 16 tuples, spouts time ack results, ackers acker ops)",
}
KIND_HISTS = {
    "spout": ("complete_latency", "transit_latency"),
    "bolt": ("execute_latency", "process_latency", "transit_latency"),
    "acker": ("transit_latency",),
    "spark": ("spark_batch_duration",),
}


def _buckets(h: LogHistogram) -> list[tuple[str, float]]:
    out = []
    items = sorted(h.counts.items())
    for bound in BUCKETS:
        out.append((repr(bound), float(sum(c for i, c in items if h.upper_bound(i) <= bound))))
    out.append(("+Inf", float(h.count)))
    return out


class StatsCollector(Collector):
    """Yields ``squall_*`` families from the executors ``source()`` returns (Storm UI's numbers per component, plus each worker's CPU and memory)."""

    def __init__(self, source: Callable[[], Iterable[ExecutorStats]]) -> None:
        self.source = source

    @override
    def collect(self) -> Iterable[Metric]:
        stats = list(self.source())
        counters = {k: CounterMetricFamily(f"squall_{k}", v, labels=LABELS) for k, v in COUNTERS.items()}
        pending = GaugeMetricFamily(
            "squall_pending", "Message ids in flight (spout; what topology.max.spout.pending bounds) or trees pending in the ledger (acker)", labels=LABELS
        )
        limit = GaugeMetricFamily(
            "squall_pending_limit", "Message ids in flight allowed per spout task (adaptive unless topology.max.spout.pending)", labels=LABELS
        )
        capacity = GaugeMetricFamily("squall_capacity", "Fraction of the last stats window spent executing (Storm UI's capacity)", labels=LABELS)
        tasks = GaugeMetricFamily("squall_tasks", "Tasks the executor runs", labels=LABELS)
        last_txid = GaugeMetricFamily("squall_batch_last_txid", "The last committed txid of a transactional spout", labels=LABELS)
        by_type = CounterMetricFamily(
            "squall_errors_by_type",
            "Errors a component reported, by cause (exception, fail, poison, fatal) and exception type (squall errors shows the last ones)",
            labels=[*LABELS, "cause", "type"],
        )
        reexecutions = CounterMetricFamily(
            "squall_reexecutions",
            "Bolt input tuples executed again because the task's last life crashed after flushing past its commit, by cause: "
            "restart (same place), takeover (the task moved)",
            labels=[*LABELS, "cause"],
        )
        replays = CounterMetricFamily("squall_replays", "Spout re-emissions by cause: fail, timeout, restart (a crash or takeover)", labels=[*LABELS, "cause"])
        lag = GaugeMetricFamily("squall_lag", "Source records not yet committed, per partition", labels=[*LABELS, "partition"])
        cpu = CounterMetricFamily("squall_worker_cpu_seconds", "CPU time of the worker process (user + system)", labels=["topology", "worker"])
        rss = GaugeMetricFamily("squall_worker_resident_memory_bytes", "Resident memory of the worker process", labels=["topology", "worker"])
        gc_s = CounterMetricFamily(
            "squall_worker_gc_seconds",
            "Seconds Python's cyclic GC ran in the worker process (no Python thread runs meanwhile; squall.worker.gc.threshold)",
            labels=["topology", "worker"],
        )
        hists: dict[str, HistogramMetricFamily] = {k: HistogramMetricFamily(f"squall_{k}_seconds", v, labels=LABELS) for k, v in HISTS.items()}
        workers: dict[tuple[str, str], dict[str, float]] = {}  # (topology, worker) -> process gauge -> its latest (largest) value
        registered: dict[str, CounterMetricFamily] = {}
        latencies: dict[str, HistogramMetricFamily] = {}
        for s in stats:
            labels = [s.topology, s.component, s.kind, s.worker]
            for k in {*KIND_COUNTERS.get(s.kind, ()), *(c for c in s.counters if c in counters)}:
                counters[k].add_metric(labels, s.counters.get(k, 0.0))
            for k in sorted(s.registered - counters.keys() - RESERVED):
                family = registered.get(k)
                if family is None:
                    family = registered[k] = CounterMetricFamily(f"squall_{k}", "Registered by the topology (TopologyContext.register_metric)", labels=LABELS)
                family.add_metric(labels, s.counters.get(k, 0.0))
            g = s.gauges
            if "pending" in g or s.kind in ("spout", "acker"):
                pending.add_metric(labels, g.get("pending", 0.0))
            if s.kind == "bolt":
                capacity.add_metric(labels, g.get("capacity", 0.0))
            if "pending_limit" in g:
                limit.add_metric(labels, g["pending_limit"])
            if s.kind == "bolt":
                for cause in REEXECUTION_CAUSES:
                    reexecutions.add_metric([*labels, cause], s.counters.get(f"reexecuted_{cause}", 0.0))
            if s.kind == "spout":
                for cause in REPLAY_CAUSES:
                    replays.add_metric([*labels, cause], s.counters.get(f"replayed_{cause}", 0.0))
            for cause, types in sorted(s.errors.items()):
                for type_name, n in sorted(types.items()):
                    by_type.add_metric([*labels, cause, type_name], n)
            if "tasks" in g:
                tasks.add_metric(labels, g["tasks"])
            if "last_txid" in s.counters:
                last_txid.add_metric(labels, s.counters["last_txid"])
            for part, value in s.partition_lag.items():
                lag.add_metric([*labels, part], value)
            for k in {*KIND_HISTS.get(s.kind, ()), *(h for h in s.hists if h in hists)}:
                h = s.hists.get(k) or LogHistogram()
                hists[k].add_metric(labels, _buckets(h), h.total)
            for k in sorted(s.hists.keys() - hists.keys()):  # TopologyContext.register_latency
                latency = latencies.get(k)
                if latency is None:
                    what = "Registered by the topology (TopologyContext.register_latency)"
                    latency = latencies[k] = HistogramMetricFamily(f"squall_{k}_seconds", what, labels=LABELS)
                latency.add_metric(labels, _buckets(s.hists[k]), s.hists[k].total)
            if "process_cpu_seconds" in g:
                mine = workers.setdefault((s.topology, s.worker), {})
                for name in PROCESS_GAUGES:
                    if name in g:
                        mine[name] = max(mine.get(name, 0.0), g[name])
        for (topology, worker), mine in workers.items():
            cpu.add_metric([topology, worker], mine["process_cpu_seconds"])
            rss.add_metric([topology, worker], mine.get("process_rss_bytes", 0.0))
            if "process_gc_seconds" in mine:  # a worker that measures its GC (service/worker/process.py)
                gc_s.add_metric([topology, worker], mine["process_gc_seconds"])
        yield from counters.values()
        yield from registered.values()
        yield from (by_type, reexecutions, replays, pending, limit, capacity, tasks, last_txid, lag, cpu, rss, gc_s)
        yield from hists.values()
        yield from latencies.values()


class ProcessStats(Collector):
    """A supervisor's own CPU seconds and resident memory, labelled with its id.

    ``squall_supervisor_cpu_seconds_total`` and ``squall_supervisor_resident_memory_bytes``.
    """

    def __init__(self, supervisor: str) -> None:
        self.supervisor = supervisor

    @override
    def collect(self) -> Iterable[Metric]:
        cpu, rss = process_usage()
        c = CounterMetricFamily("squall_supervisor_cpu_seconds", "CPU time of the supervisor process (user + system)", labels=["supervisor"])
        c.add_metric([self.supervisor], cpu)
        m = GaugeMetricFamily("squall_supervisor_resident_memory_bytes", "Resident memory of the supervisor process", labels=["supervisor"])
        m.add_metric([self.supervisor], rss)
        yield c
        yield m


def merge_snapshots(snapshots: Iterable[dict[str, Any]]) -> list[ExecutorStats]:
    """Stats snapshots (``schemas/stats.schema.json``) folded into one :class:`ExecutorStats` per ``(topology, component, kind, worker)``.

    Counters and gauges add up, histograms merge, lag is per partition. A supervisor exposes
    its workers' executors this way.
    """
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
        s.registered.update(snap.get("registered", ()))
        merge_counts(s.errors, snap.get("errors", {}))
    return list(out.values())


def serve(registry: CollectorRegistry, port: int, host: str = "127.0.0.1") -> None:
    """Expose ``registry`` on ``http://host:port/metrics`` (127.0.0.1 unless configured)."""
    start_http_server(port, addr=host, registry=registry)
