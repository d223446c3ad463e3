"""The adaptive bound on trees in flight under a slow bolt (issue 13): the spout holds back
instead of queueing trees at the bolt until they time out, and trees in flight stay within
the bound (the memory bound: at most that many records per spout task)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from service.config import ServiceSettings
from service.run.runner import Job
from streams.config import TopologyConfig
from tests.integration.conftest import TOPOLOGIES, corpus_slice, direct_count

pytestmark = pytest.mark.broker


def test_a_slow_bolt_holds_the_spout_back_instead_of_timing_trees_out(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    """The split takes 4 ms a line (<= 250 lines/s) and trees time out after 5 s. The old
    fixed bound (1000 trees per task, two tasks) would queue 8 s of lines at the split."""
    src = corpus_slice(corpus, tmp_path / "in.txt", 2500)
    job = Job(TOPOLOGIES / "slow_bolt.py", src, tmp_path / "counts.json", settings)
    samples: list[tuple[float, float, float]] = []  # (trees in flight, bound per task, tasks) per spout snapshot
    split_lag: list[int] = []  # the split's input lag (records waiting), per snapshot

    def sample(j: Job) -> None:
        assert j.board is not None
        live = j.board.live(time.time())
        samples.extend((s["gauges"]["pending"], s["gauges"]["pending_limit"], s["gauges"]["tasks"]) for s in live if s["kind"] == "spout")
        split_lag.extend(sum(s["lag"].values()) for s in live if s["component"] == "split" and s["lag"])

    try:
        job.start()
        summary = job.wait(300, on_progress=sample)
        assert job.board is not None
        held_s = job.board.total("spout", "held_back_seconds")
    finally:
        job.close()
    # Backpressure is visible: the spouts spent time at their bound, and lines waited at the split.
    assert 0 < held_s <= 2 * (summary.seconds + 10) and max(split_lag) > 0, (held_s, split_lag)  # two spout executors
    assert json.loads((tmp_path / "counts.json").read_text()) == dict(direct_count(src))  # exact: nothing failed or replayed
    limits = [limit for _, limit, _ in samples]
    print(
        f"slow bolt: bound per task min {min(limits):.0f} max {max(limits):.0f}, in flight max {max(p for p, _, _ in samples):.0f}; "
        f"spouts held back {held_s:.1f} s, split input lag max {max(split_lag)}; {summary.lines()}"
    )
    assert summary.trees_failed == 0 and summary.replayed == 0 and summary.trees_acked == summary.records
    highest = 0.0
    tree = TopologyConfig.model_fields["tree_records"].default  # a next_tuple may pass the bound by less than one tree
    for pending, limit, tasks in samples:  # in time order; a bound that just shrank lets trees in flight drain
        highest = max(highest, limit)
        assert pending < (highest + tree) * tasks  # never more in flight than the bound allowed, plus one tree
    assert max(limits) < 1000  # it never reached the old fixed default, which would time trees out here
    assert summary.complete_latency_p99_s < 5.0
