"""``python -m bench scale`` in a smoke run: every size it names runs, exact, on Apache Kafka (correctness, never speed)."""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path

import pytest

from bench import scale
from streams.wire import ACKER_COMPONENT

pytestmark = [pytest.mark.broker, pytest.mark.kafka_only]


def test_scale_smoke_runs_every_size_and_counts_exactly(bootstrap: str, tmp_path: Path) -> None:
    args = Namespace(
        workers=[1, 2],
        at_tasks=2,
        tasks=[4],
        at_workers=2,
        per_component=True,
        smoke=True,
        bootstrap=bootstrap,
        broker_warmup=0.0,
        workdir=str(tmp_path),
        json=None,
    )
    assert scale.sizes(args) == [(1, 2), (2, 2), (2, 4)]
    result = scale.run(args)
    rows = result["rows"]
    assert [(r["workers"], r["tasks"], r["executors"]) for r in rows] == [(1, 2, 1), (2, 2, 2), (2, 4, 2)]
    for row in rows:
        assert row["correct"] is True, row
        assert row["records_per_s"] > 0 and row["peak_rss_bytes"] > 0 and row["p99_s"] is not None, row
    assert result["lines"] > 0 and result["cores"] >= 1
    per = result["per_component"]  # one component per worker: each worker's CPU is one hop kind's
    assert per["run"]["correct"] is True and [w["components"] for w in per["run"]["by_worker"]] == [["lines"], ["split"], ["count"], [ACKER_COMPONENT]]
    took_in = {h["component"]: h["tuples_in"] for h in per["hops"]}
    assert per["lines"] == scale.PER_COMPONENT_SMOKE_LINES
    assert took_in == {"lines": per["lines"], "split": per["lines"], "count": per["words"], ACKER_COMPONENT: per["run"]["acker_ops"]}
    assert per["words"] > per["lines"] and per["run"]["acker_ops"] > 0 and per["run"]["bytes_per_record"] > 0
    assert sum(h["cpu_s"] for h in per["hops"]) > 0
