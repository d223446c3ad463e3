"""``python -m bench scale`` in a smoke run: every size it names runs, exact, on Apache Kafka (correctness, never speed)."""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path

import pytest

from bench import scale

pytestmark = [pytest.mark.broker, pytest.mark.kafka_only]


def test_scale_smoke_runs_every_size_and_counts_exactly(bootstrap: str, tmp_path: Path) -> None:
    args = Namespace(workers=[1, 2], at_tasks=2, tasks=[4], at_workers=2, smoke=True, bootstrap=bootstrap, broker_warmup=0.0, workdir=str(tmp_path), json=None)
    assert scale.sizes(args) == [(1, 2), (2, 2), (2, 4)]
    result = scale.run(args)
    rows = result["rows"]
    assert [(r["workers"], r["tasks"], r["executors"]) for r in rows] == [(1, 2, 1), (2, 2, 2), (2, 4, 2)]
    for row in rows:
        assert row["correct"] is True, row
        assert row["records_per_s"] > 0 and row["peak_rss_bytes"] > 0 and row["p99_s"] is not None, row
    assert result["lines"] > 0 and result["cores"] >= 1
