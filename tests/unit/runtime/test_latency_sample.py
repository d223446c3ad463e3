"""A bolt executor times a sample of its input tuples (Storm's ``topology.stats.sample.rate``), each standing for LATENCY_SAMPLE."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from streams.config import resolve
from streams.model.loader import load_topology
from streams.monitoring.stats import LogHistogram
from streams.runtime.bolt import LATENCY_SAMPLE, BoltExecutor
from streams.runtime.executor import ExecutorEnv
from streams.testing.memlog import Record
from streams.wire.codec import encode_pack, encode_rooted

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@given(st.lists(st.tuples(st.floats(1e-6, 100.0), st.integers(1, 64)), max_size=50))
def test_a_weighted_observation_counts_as_that_many(obs: list[tuple[float, int]]) -> None:
    weighted, repeated = LogHistogram(), LogHistogram()
    for seconds, weight in obs:
        weighted.record(seconds, weight)
        for _ in range(weight):
            repeated.record(seconds)
    assert weighted.counts == repeated.counts and weighted.count == repeated.count
    assert abs(weighted.total - repeated.total) <= 1e-9 * max(1.0, repeated.total)
    for q in (0.5, 0.99):
        assert weighted.quantile(q) == repeated.quantile(q) or not obs


def test_the_first_tuple_and_then_one_in_sample_are_timed_each_standing_for_the_sample() -> None:
    topology = load_topology(EXAMPLES / "wordcount.py", "sampled")
    ex = BoltExecutor(ExecutorEnv(topology=topology, component="split", conf=resolve(topology.conf), bootstrap="127.0.0.1:1", workdir=Path("/tmp")))
    ex.produce = ex.transfer.send = lambda *a, **kw: None
    ex.by_partition[0] = ex._new_task(0)
    n = 3 * LATENCY_SAMPLE + 5
    lines = [encode_rooted("default", "lines", 0, 1, [f"word{i}"], i + 1, 77) for i in range(n)]
    ex._process(Record(ex.topic, 0, 0, encode_pack(lines[:10])))
    for off, line in enumerate(lines[10:], start=1):
        ex._process(Record(ex.topic, 0, off, line))
    timed = len(range(1, n + 1, LATENCY_SAMPLE))  # tuples 1, 17, 33, 49
    assert ex._exec_hist.count == timed * LATENCY_SAMPLE
    assert ex._process_hist.count == timed * LATENCY_SAMPLE  # each timed tuple was acked by the split
    assert ex._busy_s > 0 and ex.tuples_read == n
    ex._update_gauges()
    assert ex.stats.counters["executed"] == n  # counted, not estimated from the sample
