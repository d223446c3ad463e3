"""``bench all --rounds N`` (bench/rounds.py) and the quiet wait before each run (bench/procs.py::wait_quiet)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.__main__ import main
from bench.procs import machine_busy, wait_quiet
from bench.rounds import median_run, round_orders, schedule

NAMES = st.lists(st.text("abcdefgh", min_size=1, max_size=6), min_size=1, max_size=9, unique=True)


@given(names=NAMES, rounds=st.integers(1, 6))
def test_every_round_runs_every_contender_once_and_the_first_in_the_given_order(names: list[str], rounds: int) -> None:
    orders = round_orders(names, rounds)
    assert len(orders) == rounds
    assert orders[0] == names
    assert all(sorted(o) == sorted(names) for o in orders)
    assert round_orders(names, rounds) == orders  # seeded: the same on every run


def test_later_rounds_change_who_runs_after_the_limit_row() -> None:
    names = ["limit", "squall-acked", "squall-unacked", "squall-exactly-once", "squall-stateful", "squall-stream", "quixstreams-alo", "bytewax", "pathway"]
    after = {o[o.index("limit") + 1] if o.index("limit") + 1 < len(o) else None for o in round_orders(names, 3)}
    assert len(after) > 1


def test_no_rounds_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="rounds must be at least 1, got 0"):
        round_orders(["a"], 0)


@given(rates=st.lists(st.floats(1.0, 1e6), min_size=1, max_size=7))
def test_the_row_is_the_run_with_the_median_rate(rates: list[float]) -> None:
    runs = [{"records_per_s": x, "cpu_s": x * 2, "correct": True, "duplicates": 0} for x in rates]
    row = median_run(runs)
    assert row["rounds_records_per_s"] == rates
    assert row["records_per_s"] == sorted(rates)[(len(rates) - 1) // 2]
    assert row["cpu_s"] == row["records_per_s"] * 2  # one real run's figures, not a mix
    if len(rates) % 2:
        assert row["records_per_s"] == statistics.median(rates)


def test_an_incorrect_or_failed_run_is_not_hidden_by_the_others() -> None:
    good: dict[str, Any] = {"records_per_s": 10.0, "correct": True, "duplicates": 0}
    row = median_run([good, {"records_per_s": 12.0, "correct": False, "duplicates": 3}, good])
    assert row["correct"] is False and row["duplicates"] == 3
    row = median_run([good, {"error": "RuntimeError: boom", "correct": False}, good])
    assert row["error"] == "RuntimeError: boom" and row["rounds_records_per_s"] == [10.0, None, 10.0]
    with pytest.raises(ValueError):
        median_run([])


def test_wait_quiet_returns_after_the_first_quiet_window() -> None:
    # (busy, total) ticks: 90% busy, then 50%, then 5%
    readings = iter([(0, 0), (90, 100), (140, 200), (145, 300), (145, 400)])
    slept: list[float] = []
    waited = wait_quiet(busy_below=0.1, window_s=0.5, timeout_s=10.0, read=lambda: next(readings), sleep=slept.append)
    assert waited == 1.5 and slept == [0.5, 0.5, 0.5]


def test_wait_quiet_gives_up_at_its_timeout_on_a_busy_machine() -> None:
    ticks = iter(range(0, 10_000, 100))
    waited = wait_quiet(busy_below=0.1, window_s=1.0, timeout_s=3.0, read=lambda: (t := next(ticks), t), sleep=lambda _s: None)
    assert waited == 3.0


def test_machine_busy_reads_proc_stat() -> None:
    busy, total = machine_busy()
    assert 0 <= busy <= total and total > 0


@pytest.mark.parametrize("value", ["0", "-2", "x"])
def test_a_bad_rounds_value_is_one_line_and_exit_2(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["all", "--rounds", value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--rounds" in err and "Traceback" not in err


@given(names=NAMES, rounds=st.integers(1, 4))
def test_a_warm_up_round_runs_every_contender_once_before_the_measured_rounds(names: list[str], rounds: int) -> None:
    plan = schedule(names, rounds, warm=True)
    assert plan[0] == (None, names)
    assert plan[1:] == list(enumerate(round_orders(names, rounds)))
    assert schedule(names, rounds) == plan[1:]


def test_the_warm_up_round_is_run_and_shown_but_never_in_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """``bench all --warm-round``: the first run of each contender is thrown away; the row is the median of the measured rounds."""
    from types import SimpleNamespace

    from bench import compare

    speeds = iter([100.0, 1.0, 3.0, 2.0])  # the warm-up run is the slowest by far, as on a compiling broker
    calls: list[str] = []

    def fake_run(name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(name)
        return {"correct": True, "duplicates": 0, "seconds": next(speeds)}

    monkeypatch.setattr(compare, "run_contender", fake_run)
    args = SimpleNamespace(smoke=True, contenders=["squall-acked"], rounds=3, warm_round=True, input_copies=1, set_eo=None, latency_seconds=0.0)
    rows = compare.run_workload(args, "kafka", "x:1", "wordcount", {}, 1.0, 1.0, Path("."))
    row = rows["squall-acked"]
    assert calls == ["squall-acked"] * 4
    records = len(compare.load_input("wordcount", True))  # the smoke input: no header, every line a record
    assert row["rounds_records_per_s"] == [records / 1.0, records / 3.0, records / 2.0]
    assert row["records_per_s"] == records / 2.0  # the median of the measured three, not of four
    assert row["warm_round_records_per_s"] == records / 100.0
