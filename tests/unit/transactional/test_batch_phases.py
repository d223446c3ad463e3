"""Where a batch's time goes: the transactional spout times each phase of every batch, and every
bolt its ``finish_batch`` (``TopologyContext.register_latency``), on the test kit's topology."""

from __future__ import annotations

from typing import Any

import pytest

from examples import wordcount_exactly_once
from service.worker.metrics import HISTS, StatsCollector
from streams.exceptions import TopologyError
from streams.model.context import TopologyContext
from streams.model.io import ExecutorIO
from streams.monitoring.stats import ExecutorStats
from streams.testing import LocalTopology
from streams.transactional.spout import BATCH_PHASES


def test_every_committed_batch_has_each_phase_timed_once_and_every_committer_task_its_finish() -> None:
    lines = [f"the cat {i} and the dog {i % 7}" for i in range(120)]
    with LocalTopology(wordcount_exactly_once.topology(), config={"squall.batch.records": 10}) as local:
        local.feed("lines", lines)
        local.settle()
        phases = {name: local.latencies.get(("lines", name), []) for name in BATCH_PHASES}
        finishes = local.latencies.get(("count", "finish_batch_latency"), [])
        splits = local.latencies.get(("split", "finish_batch_latency"), [])
    batches = len(phases["batch_emit_latency"])
    assert batches >= 120 // (2 * 10)  # 2 source partitions, at most 10 records each a batch
    for name in ("batch_process_latency", "batch_commit_wait_latency", "batch_commit_latency"):
        assert len(phases[name]) == batches, name  # no failures: one attempt per batch
    assert len(phases["batch_save_latency"]) == 3 * batches  # before the emit, at the commit's start, after it
    assert len(finishes) == 4 * batches  # every count task finishes every batch, at its commit
    assert len(splits) == 2 * batches  # and every split task, when its input is complete
    assert all(x >= 0 for xs in (*phases.values(), finishes, splits) for x in xs)


def test_a_registered_latency_lands_in_the_executors_histogram_and_on_metrics() -> None:
    stats = ExecutorStats("wc", "lines", "spout", "w0")
    io = ExecutorIO(latency=lambda name: stats.hist(name).record)
    ctx = TopologyContext(wordcount_exactly_once.topology(), "lines", 0, io=io)
    record = ctx.register_latency("batch_emit_latency")
    record(0.25)
    record(0.5)
    ctx.register_latency("my_lookup_latency")(0.01)
    assert stats.hists["batch_emit_latency"].count == 2
    families = {m.name: m for m in StatsCollector(lambda: [stats]).collect()}
    assert "batch_emit_latency" in HISTS
    emit = families["squall_batch_emit_latency_seconds"]
    assert any(s.name.endswith("_count") and s.value == 2 and s.labels["component"] == "lines" for s in emit.samples)
    mine = families["squall_my_lookup_latency_seconds"]  # a user's own latency is exported too
    assert any(s.name.endswith("_count") and s.value == 1 for s in mine.samples)
    with pytest.raises(TopologyError, match=r"\[lines\] latency name 'Bad-Name'"):
        ctx.register_latency("Bad-Name")
    bare: Any = TopologyContext(wordcount_exactly_once.topology(), "lines", 0).register_latency("x_latency")
    assert bare(1.0) is None  # no executor publishes a bare context: recorded nowhere, no error
