"""Prometheus exposition: base units, component labels, a passed-in registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from service.metrics import StatsCollector
from streams.stats import ExecutorStats


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
    text = generate_latest(registry).decode()
    labels = 'component="lines",kind="spout",topology="wc",worker="w0"'
    assert f"squall_acked_total{{{labels}}} 42.0" in text
    assert f"squall_failed_total{{{labels}}} 2.0" in text
    assert f"squall_pending{{{labels}}} 7.0" in text
    lag = 'component="lines",kind="spout",partition="squall.wc.lines[0]",topology="wc",worker="w0"'
    assert f"squall_lag{{{lag}}} 13.0" in text
    assert f'squall_complete_latency_seconds_bucket{{{labels},le="0.025"}} 3.0' in text
    assert f'squall_complete_latency_seconds_bucket{{{labels},le="+Inf"}} 4.0' in text
    assert f"squall_complete_latency_seconds_count{{{labels}}} 4.0" in text


def test_registry_is_not_the_global_one() -> None:
    from prometheus_client import REGISTRY

    before = set(REGISTRY._names_to_collectors)
    CollectorRegistry().register(StatsCollector(list))
    assert set(REGISTRY._names_to_collectors) == before
