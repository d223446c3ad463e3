"""Prometheus exposition: base units, component labels, a passed-in registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from service.worker.metrics import StatsCollector
from streams.monitoring.stats import ExecutorStats


def samples(registry: CollectorRegistry) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = generate_latest(registry).decode()
    return {(s.name, frozenset(s.labels.items())): s.value for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_stats_are_exposed_with_component_labels_and_base_units() -> None:
    spout = ExecutorStats("wc", "lines", "spout", "w0")
    spout.inc("acked", 42)
    spout.inc("failed", 2)
    spout.gauges["pending"] = 7
    spout.partition_lag["squall.wc.lines[0]"] = 13
    for v in (0.003, 0.02, 0.02, 0.4):
        spout.hist("complete_latency").record(v)
    registry = CollectorRegistry()
    registry.register(StatsCollector(lambda: [spout]))
    got = samples(registry)
    labels = {"component": "lines", "kind": "spout", "topology": "wc", "worker": "w0"}

    def key(name: str, **extra: str) -> tuple[str, frozenset[tuple[str, str]]]:
        return name, frozenset({**labels, **extra}.items())

    assert got[key("squall_acked_total")] == 42
    assert got[key("squall_failed_total")] == 2
    assert got[key("squall_pending")] == 7
    assert got[key("squall_lag", partition="squall.wc.lines[0]")] == 13
    assert got[key("squall_complete_latency_seconds_bucket", le="0.025")] == 3
    assert got[key("squall_complete_latency_seconds_bucket", le="+Inf")] == 4
    assert got[key("squall_complete_latency_seconds_count")] == 4


def test_replays_by_cause_and_the_pending_bound_are_exposed() -> None:
    spout = ExecutorStats("wc", "lines", "spout", "w0")
    spout.counters.update({"replayed": 5, "replayed_fail": 1, "replayed_timeout": 0, "replayed_restart": 4})
    spout.gauges["pending_limit"] = 260
    registry = CollectorRegistry()
    registry.register(StatsCollector(lambda: [spout]))
    got = samples(registry)
    labels = {"component": "lines", "kind": "spout", "topology": "wc", "worker": "w0"}
    assert got[("squall_replayed_total", frozenset(labels.items()))] == 5
    by_cause = {cause: got[("squall_replays_total", frozenset({**labels, "cause": cause}.items()))] for cause in ("fail", "timeout", "restart")}
    assert by_cause == {"fail": 1, "timeout": 0, "restart": 4}
    assert got[("squall_pending_limit", frozenset(labels.items()))] == 260


def test_registry_is_not_the_global_one() -> None:
    from prometheus_client import REGISTRY

    before = set(REGISTRY._names_to_collectors)
    CollectorRegistry().register(StatsCollector(list))
    assert set(REGISTRY._names_to_collectors) == before


def test_spark_bolt_metrics_are_exposed() -> None:
    spark = ExecutorStats("wc", "split", "spark", "w3")
    spark.inc("spark_batches", 5)
    spark.inc("spark_input_rows", 1200)
    spark.hist("spark_batch_duration").record(0.3)
    bolt = ExecutorStats("wc", "split", "bolt", "w3")  # folded from the driver's per-batch commits
    bolt.inc("executed", 1200)
    bolt.inc("state_keys_skipped", 9)
    registry = CollectorRegistry()
    registry.register(StatsCollector(lambda: [spark, bolt]))
    got = samples(registry)
    spark_labels = frozenset({"component": "split", "kind": "spark", "topology": "wc", "worker": "w3"}.items())
    bolt_labels = frozenset({"component": "split", "kind": "bolt", "topology": "wc", "worker": "w3"}.items())
    assert got[("squall_spark_batches_total", spark_labels)] == 5
    assert got[("squall_spark_input_rows_total", spark_labels)] == 1200
    assert got[("squall_spark_batch_duration_seconds_count", spark_labels)] == 1
    assert got[("squall_executed_total", bolt_labels)] == 1200
    assert got[("squall_state_keys_skipped_total", bolt_labels)] == 9


def test_a_supervisor_merges_its_workers_snapshots_per_component_and_worker() -> None:
    from service.worker.metrics import merge_snapshots

    a = ExecutorStats("wc", "count", "bolt", "w1")
    a.inc("executed", 5)
    a.hist("execute_latency").record(0.002)
    a.gauges["capacity"] = 0.25
    b = ExecutorStats("wc", "count", "bolt", "w1")
    b.inc("executed", 7)
    b.hist("execute_latency").record(0.004)
    c = ExecutorStats("wc", "lines", "spout", "w0")
    c.partition_lag["squall.wc.lines[0]"] = 3
    merged = {(s.component, s.worker): s for s in merge_snapshots([a.snapshot(), b.snapshot(), c.snapshot()])}
    assert set(merged) == {("count", "w1"), ("lines", "w0")}
    assert merged[("count", "w1")].counters["executed"] == 12 and merged[("count", "w1")].hists["execute_latency"].count == 2
    assert merged[("lines", "w0")].partition_lag == {"squall.wc.lines[0]": 3}


def test_a_metric_a_task_registered_reaches_metrics_as_its_own_counter() -> None:
    """TopologyContext.register_metric promised squall_<name>_total; only known counters were exported (issue 25)."""
    from service.worker.metrics import merge_snapshots

    bolt = ExecutorStats("fl", "hourly", "bolt", "w1")
    bolt.counters.update({"window_late": 20.0, "acked": 5.0, "restored_trees": 3.0})
    bolt.registered.update({"window_late", "acked"})  # acked: a built-in name, exported once as the built-in
    merged = merge_snapshots([bolt.snapshot(), {**bolt.snapshot(), "instance": "other", "counters": {"window_late": 2.0}}])
    registry = CollectorRegistry()
    registry.register(StatsCollector(lambda: merged))
    got = samples(registry)
    labels = frozenset({"component": "hourly", "kind": "bolt", "topology": "fl", "worker": "w1"}.items())
    assert got[("squall_window_late_total", labels)] == 22
    assert got[("squall_acked_total", labels)] == 5
    assert not any(name.startswith("squall_restored_trees") for name, _ in got)  # internal, not registered: not exported


def test_a_metric_name_prometheus_would_mangle_is_refused_naming_the_component() -> None:
    import pytest

    from streams import TopologyBuilder
    from streams.exceptions import TopologyError
    from streams.model.context import TopologyContext
    from tests.unit.model.test_windowed import Lines

    b = TopologyBuilder()
    b.set_spout("rows", Lines())
    ctx = TopologyContext(b.create_topology("t"), "rows", 0)
    ctx.register_metric("late_flights", lambda: 1.0)
    for bad in ("Late", "late-flights", "late_total", "9late"):
        with pytest.raises(TopologyError, match=r"\[rows\] metric name"):
            ctx.register_metric(bad, lambda: 1.0)


def test_each_workers_gc_seconds_are_exposed_once_per_worker() -> None:
    count = ExecutorStats("wc", "count", "bolt", "w1")
    split = ExecutorStats("wc", "split", "bolt", "w1")
    for s, gc_s in ((count, 0.25), (split, 0.5)):  # snapshots of one process taken at different moments: the later total wins
        s.gauges["process_cpu_seconds"] = 3.0
        s.gauges["process_gc_seconds"] = gc_s
    lines = ExecutorStats("wc", "lines", "spout", "w0")
    lines.gauges["process_cpu_seconds"] = 1.0  # a worker that does not measure its GC exports no GC sample
    registry = CollectorRegistry()
    registry.register(StatsCollector(lambda: [count, split, lines]))
    got = samples(registry)
    assert got[("squall_worker_gc_seconds_total", frozenset({"topology": "wc", "worker": "w1"}.items()))] == 0.5
    assert not any(name == "squall_worker_gc_seconds_total" and ("worker", "w0") in labels for name, labels in got)
    assert got[("squall_worker_cpu_seconds_total", frozenset({"topology": "wc", "worker": "w0"}.items()))] == 1.0
