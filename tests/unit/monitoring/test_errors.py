"""Errors per component: the report, the throttle, the latest per key, and the collectors that report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from service.query.errors import BRIEF_NOTE, error_lines
from service.worker.metrics import StatsCollector, merge_snapshots
from streams import BasicBolt, BasicOutputCollector, Tuple
from streams.exceptions import FailedException
from streams.model.bolt import BasicBoltExecutor
from streams.monitoring.errors import ErrorLog, ErrorReport, ErrorThrottle, latest_reports
from streams.monitoring.stats import ExecutorStats
from streams.runtime.acks import AckBuffer
from streams.runtime.bolt_task import execute_guarded
from tests.unit.service.test_metrics import samples
from tests.unit.sim import Capture, collector

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "schemas" / "error.schema.json").read_text())


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def error_log(max_per: int = 5, kept: int = 3, interval: float = 10.0) -> tuple[ErrorLog, list[tuple[bytes, bytes]], Clock]:
    published: list[tuple[bytes, bytes]] = []
    clock = Clock()
    log = ErrorLog("wc", "split", "w1", ErrorThrottle(interval, max_per, clock), lambda k, v: published.append((k, v)), kept, lambda: 1_700_000_000.0, 4242)
    return log, published, clock


def boom() -> None:
    raise ZeroDivisionError("division by zero")


def test_an_exception_is_reported_with_its_type_message_traceback_and_input() -> None:
    log, published, _ = error_log()
    try:
        boom()
    except ZeroDivisionError as exc:
        report = log.report("exception", 7, exc=exc, where="squall.wc.split[2]@17")
    assert report is not None
    assert (report.component, report.task, report.worker, report.pid, report.cause, report.type) == ("split", 7, "w1", 4242, "exception", "ZeroDivisionError")
    assert report.message == "division by zero"
    assert "in boom" in report.traceback and "ZeroDivisionError" in report.traceback
    assert report.where == "squall.wc.split[2]@17"
    ((key, value),) = published
    assert key == b"split/7/0"
    jsonschema.validate(json.loads(value), SCHEMA)
    assert ErrorReport.decode(value, topic="t", partition=0, offset=0) == report
    assert "[split] task 7 (w1@" in report.line() and "ZeroDivisionError: division by zero on squall.wc.split[2]@17" in report.line()


def test_a_fail_reason_has_no_traceback_and_validates() -> None:
    log, published, _ = error_log()
    report = log.report("fail", 3, message="no such user 42", type_name="Fail", where="squall.wc.count[0]@5")
    assert report is not None and report.traceback == "" and report.type == "Fail"
    jsonschema.validate(json.loads(published[0][1]), SCHEMA)


@given(st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), min_size=1, max_size=60), st.integers(0, 6), st.integers(1, 4))
def test_the_throttle_publishes_at_most_the_limit_per_window_and_counts_everything(times: list[float], max_per: int, kept: int) -> None:
    log, published, clock = error_log(max_per=max_per, kept=kept, interval=10.0)
    allowed_at: list[float] = []
    for t in sorted(times):
        clock.now = t
        if log.report("exception", 1, exc=ValueError("bad")) is not None:
            allowed_at.append(t)
    assert log.counts == {"exception": {"ValueError": len(times)}}
    assert len(published) == len(allowed_at) == len(times) - log.throttle.suppressed
    # The model: fixed windows, each opened by the first report at least 10 s after the last
    # window opened (Storm's throttle); the first max_per reports of a window are published.
    expected: list[float] = []
    start, in_window = float("-inf"), 0
    for t in sorted(times):
        if t - start >= 10.0:
            start, in_window = t, 0
        if in_window < max_per:
            expected.append(t)
            in_window += 1
    assert allowed_at == expected
    for begin in allowed_at:  # so any 10 s span holds at most two windows' worth
        assert sum(1 for t in allowed_at if begin <= t < begin + 10.0) <= 2 * max_per
    keys = {k for k, _ in published}
    assert len(keys) <= kept  # the slots cycle: compaction keeps at most `kept` per task


def test_past_the_throttle_brief_reports_without_traceback_go_to_their_own_ring_up_to_their_cap() -> None:
    published: list[tuple[bytes, bytes]] = []
    clock = Clock()
    log = ErrorLog(
        "wc", "split", "w1", ErrorThrottle(10.0, 2, clock), lambda k, v: published.append((k, v)), 3, lambda: 1.0, 1, ErrorThrottle(10.0, 4, clock), 4
    )
    for i in range(10):
        try:
            boom()
        except ZeroDivisionError as exc:
            log.report("exception", 7, exc=exc, where=f"t[0]@{i}", roots=[100 + i])
    reports = [json.loads(v) for _, v in published]
    assert [k for k, _ in published] == [b"split/7/0", b"split/7/1", b"split/7/b0", b"split/7/b1", b"split/7/b2", b"split/7/b3"]
    assert [bool(r["traceback"]) for r in reports] == [True, True, False, False, False, False]  # 2 full, then 4 brief
    assert [r["roots"] for r in reports] == [[100 + i] for i in range(6)]
    assert log.counts == {"exception": {"ZeroDivisionError": 10}}  # counted, all of them
    shown = error_lines([ErrorReport(**r) for r in reports], 6, traceback=True)
    assert sum(line == "    Traceback (most recent call last):" for line in shown) == 2
    assert shown.count(f"    {BRIEF_NOTE}") == 4  # squall errors --traceback says why the brief ones have none


def test_latest_reports_keep_the_last_per_key_filter_by_component_and_skip_garbage() -> None:
    def rec(component: str, slot: int, at: float, msg: str) -> tuple[bytes, bytes]:
        r = ErrorReport("wc", component, 1, "w0", "h", 1, at, "exception", "E", msg, "", "")
        return r.key(slot), r.encode()

    records: list[tuple[bytes | None, bytes | None]] = [
        rec("split", 0, 1.0, "old"),
        rec("count", 0, 2.0, "c"),
        (b"x", b"not json"),
        rec("split", 0, 3.0, "new"),
        rec("split", 1, 2.5, "other slot"),
    ]
    assert [r.message for r in latest_reports(records, "t")] == ["c", "other slot", "new"]
    assert [r.message for r in latest_reports(records, "t", "split")] == ["other slot", "new"]


def tuple_at(offset: int) -> Tuple:
    return Tuple(["a b"], "default", "lines", 0, {11: 5}, {"line": 0}, "squall.wc.split", 0, offset)


def test_a_fail_with_a_reason_and_report_error_reach_the_components_errors() -> None:
    log, _, _ = error_log()
    coll = collector(Capture(), AckBuffer("acker", 1))
    coll.errors = log
    t = tuple_at(9)
    coll.fail(t, "user 42 not found")
    coll.report_error(RuntimeError("cache cold"))  # Storm's reportError: nothing fails
    assert coll.failed == 1
    assert log.counts == {"fail": {"Fail": 1}, "exception": {"RuntimeError": 1}}
    coll.fail(t, "again")  # already settled: neither failed nor reported twice
    assert coll.failed == 1 and log.counts["fail"] == {"Fail": 1}


class Picky(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["w"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        if tuple.offset == 1:
            raise FailedException("offset 1 is not wanted")
        if tuple.offset == 2:
            raise FailedException()
        if tuple.offset == 3:
            raise KeyError("missing")


def test_a_failed_exceptions_message_is_the_fails_reason_and_other_exceptions_are_returned() -> None:
    log, published, _ = error_log()
    coll = collector(Capture(), AckBuffer("acker", 1))
    coll.errors = log
    bolt = BasicBoltExecutor(Picky())
    bolt.prepare({}, None, coll)  # type: ignore[arg-type]
    assert execute_guarded(bolt, coll, tuple_at(1)) is None
    assert execute_guarded(bolt, coll, tuple_at(2)) is None  # no message: no reason to report
    exc = execute_guarded(bolt, coll, tuple_at(3))
    assert isinstance(exc, KeyError)
    assert coll.failed == 3
    assert log.counts == {"fail": {"Fail": 1}}  # the KeyError is the executor's to report
    assert json.loads(published[0][1])["message"] == "offset 1 is not wanted"
    assert json.loads(published[0][1])["where"] == "squall.wc.split[0]@1"


def test_errors_by_cause_and_type_reach_metrics_and_merge_across_snapshots() -> None:
    a, b = ExecutorStats("wc", "split", "bolt", "w0"), ExecutorStats("wc", "split", "bolt", "w0")
    a.errors.update({"exception": {"ZeroDivisionError": 2}, "poison": {"DecodeError": 1}})
    b.errors.update({"exception": {"ZeroDivisionError": 1, "KeyError": 4}})
    (merged,) = merge_snapshots([a.snapshot(), b.snapshot()])
    assert merged.errors == {"exception": {"ZeroDivisionError": 3, "KeyError": 4}, "poison": {"DecodeError": 1}}
    registry = CollectorRegistry()
    registry.register(StatsCollector(lambda: [merged]))
    got = samples(registry)
    labels = {"component": "split", "kind": "bolt", "topology": "wc", "worker": "w0"}
    assert got[("squall_errors_by_type_total", frozenset({**labels, "cause": "exception", "type": "ZeroDivisionError"}.items()))] == 3
    assert got[("squall_errors_by_type_total", frozenset({**labels, "cause": "poison", "type": "DecodeError"}.items()))] == 1
