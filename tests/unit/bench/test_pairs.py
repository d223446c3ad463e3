"""``python -m bench pairs``: its runs alternate and its summary pairs them (never a speed check)."""

from __future__ import annotations

import doctest
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import pairs
from bench.pairs import checked, order, run_pairs, summarise


def row(rps: float, cpu: float = 10.0) -> dict[str, Any]:
    return {"records_per_s": rps, "cpu_us_per_record": cpu}


def test_docstring_examples_run() -> None:
    result = doctest.testmod(pairs)
    assert result.attempted >= 2 and result.failed == 0


def test_each_contender_runs_first_in_half_of_the_pairs_and_every_row_says_so() -> None:
    ran: list[tuple[int, str]] = []

    def run_one(pair: int, name: str) -> dict[str, Any]:
        ran.append((pair, name))
        return row(100.0)

    runs = run_pairs(4, "A", "B", run_one)
    assert ran == [(0, "A"), (0, "B"), (1, "B"), (1, "A"), (2, "A"), (2, "B"), (3, "B"), (3, "A")]
    assert [p["A"]["first"] for p in runs] == [True, False, True, False]
    assert [p["B"]["first"] for p in runs] == [False, True, False, True]
    assert all(sorted(order(i, "A", "B")) == ["A", "B"] for i in range(5))


def test_a_pair_ratio_compares_the_runs_of_that_pair_only() -> None:
    # the machine slowed down between the pairs: each pair is 0.9 apart, the medians of all runs are not
    s = summarise([{"A": row(100.0, 50.0), "B": row(90.0, 55.0)}, {"A": row(50.0, 100.0), "B": row(45.0, 110.0)}], "A", "B", 0.8)
    assert [round(r, 6) for r in s["pair_ratios"]] == [0.9, 0.9]
    assert [round(r, 6) for r in s["pair_cpu_ratios"]] == [1.1, 1.1]
    assert round(s["median_pair_ratio"], 6) == 0.9 and s["within_target"] is True
    assert round(s["ratio_of_medians"], 6) == 0.9


def test_below_the_target_is_not_met_and_no_target_gives_no_verdict() -> None:
    pair = [{"A": row(100.0), "B": row(70.0)}]
    assert summarise(pair, "A", "B", 0.8)["within_target"] is False
    assert summarise(pair, "A", "B")["within_target"] is None


@given(st.lists(st.tuples(st.floats(1, 1e6), st.floats(1, 1e6)), min_size=1, max_size=9), st.floats(0.1, 2.0))
def test_the_median_ratio_lies_between_the_pairs_ratios(runs: list[tuple[float, float]], target: float) -> None:
    s = summarise([{"A": row(a), "B": row(b)} for a, b in runs], "A", "B", target)
    assert min(s["pair_ratios"]) <= s["median_pair_ratio"] <= max(s["pair_ratios"])
    assert s["within_target"] == (s["median_pair_ratio"] >= target)


def test_a_checked_row_gets_its_rates_and_a_wrong_output_stops_the_bench() -> None:
    import pytest

    from bench.pairs import checked

    row = checked({"correct": True, "seconds": 2.0, "cpu_s": 0.5, "hops": [1]}, 0, "A", "wordcount", 1000)
    assert row["records_per_s"] == 500.0 and row["cpu_us_per_record"] == 500.0 and "hops" not in row
    with pytest.raises(SystemExit, match="pair 3: B gave a wrong result on flights"):
        checked({"correct": False, "seconds": 1.0, "cpu_s": 1.0}, 3, "B", "flights", 10)


def test_a_contender_without_cpu_the_limit_row_gives_ratios_of_throughput_only() -> None:
    """``bench pairs limit squall-acked``: the limit row measures no process of its own (it raised KeyError: 'cpu_s')."""
    limit = checked({"correct": True, "seconds": 2.0}, 0, "limit", "wordcount", 100_000)
    acked = checked({"correct": True, "seconds": 4.0, "cpu_s": 3.0}, 0, "squall-acked", "wordcount", 100_000)
    assert limit["cpu_us_per_record"] is None and acked["cpu_us_per_record"] == 30.0
    s = summarise([{"limit": limit, "squall-acked": acked}], "limit", "squall-acked", 0.5)
    assert s["pair_ratios"] == [0.5] and s["pair_cpu_ratios"] == [None] and s["median_pair_cpu_ratio"] is None and s["within_target"]


def test_set_b_runs_b_with_its_settings_and_a_without_so_b_may_be_a_itself(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``bench pairs squall-acked squall-acked --set-b K=V``: what a setting changes, in ABBA pairs."""
    calls: list[tuple[str, dict[str, Any] | None]] = []

    def fake_run(name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        settings = args[8] if len(args) > 8 else kwargs.get("settings")
        calls.append((name, settings))
        return {"correct": True, "seconds": 1.0 if settings else 2.0, "cpu_s": 1.0, "duplicates": 0, "peak_rss_bytes": 1}

    monkeypatch.setattr(pairs, "run_contender", fake_run)
    argv = ["pairs", "squall-acked", "squall-acked", "--set-b", "squall.transfer.batch.size=500", "--smoke", "--runs", "2", "--bootstrap", "x:1"]
    argv += ["--json", str(tmp_path / "p.json")]
    from bench.__main__ import main

    main(argv)
    assert calls == [
        ("squall-acked", None),
        ("squall-acked", {"squall.transfer.batch.size": 500}),
        ("squall-acked", {"squall.transfer.batch.size": 500}),
        ("squall-acked", None),
    ]
    result = json.loads((tmp_path / "p.json").read_text())
    assert result["set_b"] == {"squall.transfer.batch.size": 500}
    assert result["summary"]["b"] == "squall-acked [squall.transfer.batch.size=500]"
    assert result["summary"]["pair_ratios"] == [2.0, 2.0]


def test_set_b_reaches_the_exactly_once_topology_as_its_own_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``run_contender`` takes squall-exactly-once's keys apart (``eo_settings``, as ``bench all --set-eo``): ``--set-b`` must reach them."""
    calls: list[tuple[str, dict[str, Any] | None]] = []

    def fake_run(name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        eo = kwargs.get("eo_settings")
        calls.append((name, eo))
        return {"correct": True, "seconds": 1.0 if eo else 2.0, "cpu_s": 1.0, "duplicates": 0, "peak_rss_bytes": 1}

    monkeypatch.setattr(pairs, "run_contender", fake_run)
    argv = ["pairs", "squall-exactly-once", "squall-exactly-once", "--set-b", "squall.batch.records=20000", "--smoke", "--runs", "1", "--bootstrap", "x:1"]
    from bench.__main__ import main

    main([*argv, "--json", str(tmp_path / "p.json")])
    assert calls == [("squall-exactly-once", None), ("squall-exactly-once", {"squall.batch.records": 20000})]


def test_a_warm_up_round_runs_a_and_b_once_before_the_pairs_and_counts_in_no_ratio(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``--warm-round``: A then B, unmeasured, then the ABBA pairs; the slow warm-up runs change no pair's ratio."""
    calls: list[str] = []
    seconds = iter([50.0, 60.0, 2.0, 1.0, 1.0, 2.0])  # the warm-up runs are far slower, as on a compiling broker

    def fake_run(name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(name)
        return {"correct": True, "seconds": next(seconds), "cpu_s": 1.0, "duplicates": 0, "peak_rss_bytes": 1}

    monkeypatch.setattr(pairs, "run_contender", fake_run)
    from bench.__main__ import main

    main(["pairs", "limit", "squall-acked", "--warm-round", "--smoke", "--runs", "2", "--bootstrap", "x:1", "--json", str(tmp_path / "p.json")])
    assert calls == ["limit", "squall-acked", "limit", "squall-acked", "squall-acked", "limit"]
    result = json.loads((tmp_path / "p.json").read_text())
    assert result["summary"]["pair_ratios"] == [2.0, 2.0]
    records = result["records"]
    assert result["warm_round_records_per_s"] == {"limit": records / 50.0, "squall-acked": records / 60.0}
