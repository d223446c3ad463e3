"""squall dlq without a broker: choosing dead letters, joining them with error reports, refusing a bolt's."""

from __future__ import annotations

import pytest

from service.exceptions import UsageError
from service.query.dlq import DeadLetter, choose, explain, full_report, replay, show_lines
from streams.monitoring.errors import ErrorReport
from streams.wire.dead_letter import dead_letter_headers, read_dead_letter_headers


def letter(offset: int, component: str, cause: str, source_offset: int, root: int | None = None) -> DeadLetter:
    details = {"cause": cause, "task": "0"}
    if root is not None:
        details.update({"root": str(root), "first.failure": "100.000", "last.failure": "107.500"})
    attempts = 0 if cause == "poison" else 3
    headers = dead_letter_headers("why", component=component, topic="squall.t.lines", partition=0, offset=source_offset, attempts=attempts, details=details)
    return DeadLetter(offset, None, f"line {source_offset}".encode(), read_dead_letter_headers(headers))


def report(component: str, cause: str, where: str, roots: tuple[int, ...], message: str) -> ErrorReport:
    return ErrorReport("t", component, 1, "w0", "h", 1, 100.0, cause, "ZeroDivisionError", message, "Traceback ...\n  line 1", where, roots)


LETTERS = [letter(0, "lines", "fail", 1, root=11), letter(1, "lines", "poison", 2), letter(2, "lines", "timeout", 3, root=13), letter(3, "split", "poison", 9)]


def test_choose_by_offset_component_and_cause_and_name_a_missing_offset() -> None:
    assert [d.offset for d in choose(LETTERS)] == [0, 1, 2, 3]
    assert [d.offset for d in choose(LETTERS, [2, 0])] == [0, 2]
    assert [d.offset for d in choose(LETTERS, component="lines", cause="poison")] == [1]
    with pytest.raises(UsageError, match="no dead letter at offset 7"):
        choose(LETTERS, [7])


def test_a_dead_letter_is_explained_by_the_report_of_its_last_tree_or_of_its_record() -> None:
    reports = [
        report("check", "exception", "squall.t.check[0]@4", (11, 99), "division by zero"),
        report("lines", "poison", "squall.t.lines[0]@2", (), "not JSON"),
    ]
    assert explain(LETTERS[0], reports) == reports[0]  # joined on the root of its last tree
    assert explain(LETTERS[1], reports) == reports[1]  # a poison record: joined on where it was read
    assert explain(LETTERS[2], reports) is None  # a timeout: nobody reported it
    earlier = report("check", "exception", "squall.t.check[0]@2", (10,), "first try")
    two_tries = DeadLetter(5, None, b"x", {**LETTERS[0].headers, "roots": "10,11"})
    assert explain(two_tries, [earlier]) == earlier  # the last tree's report was throttled: an earlier tree's says why
    assert explain(two_tries, [earlier, reports[0]]) == reports[0]  # the last tree's report first
    shown = show_lines(LETTERS[0], reports[0])
    assert shown[0] == "dead letter @0" and "  cause          fail" in shown and "  root           11" in shown
    assert "  value          line 1" in shown and any(line.startswith("  reported       ") and "division by zero" in line for line in shown)
    assert any("timed out" in line for line in show_lines(LETTERS[2], None))
    said = DeadLetter(6, None, b"x", {**LETTERS[0].headers, "why": "[check] fail: stale row"})  # the fail op's words, no report
    shown = show_lines(said, None)
    assert "  why            [check] fail: stale row" in shown and shown[-1].startswith("  reported       nothing")


def test_only_records_a_spout_read_are_replayed_and_a_bolts_is_refused_by_name() -> None:
    with pytest.raises(UsageError, match=r"dead letter @3 was written by \[split\], not by a spout \(lines\)"):
        replay("127.0.0.1:1", "t", LETTERS, {"lines"})


def test_list_names_the_bolt_that_failed_the_record_and_the_spout_that_gave_up_on_it() -> None:
    def failed(offset: int, why: str, cause: str = "fail") -> DeadLetter:
        details = {"cause": cause, "task": "0", "why": why, "root": "5", "last.failure": "107.500"}
        headers = dead_letter_headers("gave up", component="lines", topic="squall.t.lines", partition=1, offset=40, attempts=6, details=details)
        return DeadLetter(offset, None, b"x", read_dead_letter_headers(headers))

    by_bolt = failed(0, "[check] ZeroDivisionError: division by zero")
    assert by_bolt.failed_by == "check" and by_bolt.component == "lines"
    assert " [check] fail " in by_bolt.line() and "squall.t.lines[1]@40 (dead-lettered by [lines]): gave up" in by_bolt.line()
    timed_out = failed(1, "[lines] no ack within the message timeout of 30 s", cause="timeout")
    assert timed_out.failed_by == "lines" and "dead-lettered by" not in timed_out.line()
    poison = LETTERS[3]  # no why: the writer failed it
    assert poison.failed_by == "split" and " [split] poison " in poison.line()
    # --component matches the bolt that failed a record, or the spout that wrote its dead letter
    letters = [by_bolt, timed_out, poison]
    assert [d.offset for d in choose(letters, component="check")] == [0]
    assert [d.offset for d in choose(letters, component="lines")] == [0, 1]


def test_show_adds_the_last_full_report_when_the_throttle_made_the_last_ones_brief() -> None:
    def exc(root: int, traceback: str) -> ErrorReport:
        return ErrorReport("t", "check", 1, "w0", "h", 1, 100.0 + root, "exception", "ZeroDivisionError", "division by zero", traceback, "", (root,))

    letter_ = DeadLetter(7, None, b"x", {**LETTERS[0].headers, "roots": "10,11,12"})
    full = exc(10, 'Traceback (most recent call last):\n  File "check.py", line 3\n    1 / 0')
    reports = [full, exc(11, ""), exc(12, "")]  # six deliveries in one throttle interval: the last reports are brief
    latest = explain(letter_, reports)
    assert latest is reports[2] and full_report(letter_, reports) is full
    shown = show_lines(letter_, latest, full_report(letter_, reports))
    at = next(i for i, line in enumerate(shown) if line.startswith("  last full      "))
    assert "an earlier delivery's report" in shown[at] and shown[at + 2] == '      File "check.py", line 3'
    none_kept = show_lines(letter_, reports[2], full_report(letter_, reports[1:]))
    assert full_report(letter_, reports[1:]) is None
    assert none_kept[-1].startswith("  traceback      none kept: every report of this record came past the error throttle")
    assert not any(line.startswith("  last full") for line in show_lines(letter_, full, full))  # a full report needs nothing more
