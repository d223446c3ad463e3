"""The benchmark's smoke run: tiny input, every contender but squall-spark, the correctness check.

bytewax and Pathway run from virtualenvs of their own (bench/peers/venvs.py): the first run makes
them (about 1.6 GB for Pathway, from PyPI).

It keeps bench/ from rotting; it asserts correctness, never speed.
"""

from __future__ import annotations

from argparse import Namespace
from typing import Any

import pytest

from bench import compare

pytestmark = pytest.mark.broker


SKIPPED = ("squall-spark",)
"""Left out of the smoke run (CI time: 53 s of its 180 s, most of it the Spark driver's start):
``examples/wordcount_spark.py`` runs in ``test_spark_bolt.py``, and ``python -m bench spark --smoke``
runs this contender alone."""
CONTENDERS = [c for c in compare.CONTENDERS if c not in SKIPPED]


def cpu_measured(row: dict[str, Any]) -> bool:
    """The row's CPU was read from its processes: ``cpu_s`` is a number of seconds, and per record when above zero.

    ``/proc/<pid>/stat`` counts in clock ticks (10 ms): a smoke run of a few hundred records
    can finish inside one tick (CI saw Pathway's word count at 0.0 s in a 0.1 s run).
    """
    cpu = row["cpu_s"]
    return isinstance(cpu, (int, float)) and cpu >= 0 and (cpu == 0 or row["cpu_us_per_record"] > 0)


def test_bench_smoke_every_contender_runs_and_is_correct(bootstrap: str, broker_kind: str) -> None:
    kind = "kafka" if broker_kind in ("kafka", "external") else broker_kind
    args = Namespace(
        smoke=True,
        bootstrap=bootstrap,
        broker=kind,
        workloads=["wordcount", "latency", "windows"],  # flights: its parsing and grouping run in test_windows (CI time)
        contenders=CONTENDERS,
        json=None,
        latency_seconds=1.0,
        latency_settle=0.0,
        broker_warmup=0.0,  # the fixture's broker serves the whole session; the smoke run measures nothing
    )
    result = compare.run(args)
    assert list(result["brokers"]) == [kind]
    workloads = result["brokers"][kind]["workloads"]
    assert set(workloads) == {"wordcount", "latency", "windows"}
    windows = workloads.pop("windows")
    assert list(windows) == list(compare.WINDOW_CONTENDERS)
    for name, row in windows.items():  # windows plus late flights equal the group-by, on each
        assert row.get("error") is None and row["correct"] is True and row["records_per_s"] > 0, (name, row)
        assert row["peak_rss_bytes"] > 0 and cpu_measured(row), (name, row)
    latency = workloads.pop("latency")
    assert list(latency) == ["squall-acked"] and latency["squall-acked"]["correct"] is True, latency
    assert latency["squall-acked"]["p99_s"] > 0 and latency["squall-acked"]["bytes_per_record"] > 0
    for workload, rows in workloads.items():
        assert list(rows) == [c for c in CONTENDERS if c in compare.VENV_PEERS or not any(c in own for own in compare.OWN_CONTENDERS.values())]
        if kind == "tansu":
            assert "not run" in rows["quixstreams-eos"]["note"]
        else:  # on Apache Kafka Quix's exactly-once runs, and must be exact
            assert rows["quixstreams-eos"]["correct"] is True and rows["quixstreams-eos"]["duplicates"] == 0, rows["quixstreams-eos"]
            assert rows["limit"]["tool"] == "ProducerPerformance + ConsumerPerformance" and len(rows["limit"]["limit_hops"]) == 2
        assert rows["squall-stateful"]["correct"] is True and rows["squall-stateful"]["duplicates"] == 0  # exact, read from its checkpointed state
        assert rows["squall-stream"]["correct"] is True and rows["squall-trident"]["correct"] is True  # the Stream API's and Trident's word counts
        assert rows["squall-trident"]["duplicates"] == 0  # exact, read from its committed state
        for name, row in rows.items():
            if "note" in row:
                continue
            assert row.get("error") is None, (workload, name, row)
            assert row["correct"] is True, (workload, name, row)
            assert row["records_per_s"] and row["records_per_s"] > 0
            if name != "limit":  # the contender's own processes: memory and CPU over the run, per record
                assert row["peak_rss_bytes"] and row["peak_rss_bytes"] > 0
                assert cpu_measured(row), (workload, name, row)
            if name.startswith("squall"):
                assert row["bytes_per_record"] > 0, (workload, name, row)
        assert rows["squall-acked"]["p99_s"] is not None  # complete latency was measured
        assert rows["squall-unacked"]["p99_s"] is None  # nothing is tracked with 0 ackers
        assert rows["squall-unacked"]["acker_ops"] == 0 and rows["squall-acked"]["acker_ops"] > 0
        acked = rows["squall-acked"]  # every worker measures its cyclic GC (streams.monitoring.gc_time), read per worker from the stats
        assert set(acked["gc_s_by_worker"]) == {f"w{i}" for i in range(len(acked["workers"]))} and acked["gc_s"] >= 0
        assert acked["held_back_s"] >= 0 and rows["squall-unacked"]["held_back_s"] == 0  # no bound without ackers
        assert rows["squall-exactly-once"]["duplicates"] == 0  # exact, read from its committed state
        assert sum(r["cpu_s"] for n, r in rows.items() if n.startswith("squall")) > 0  # Squall's workers ran for longer than a tick
