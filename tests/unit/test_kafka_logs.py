"""The integration tests' check that no producer wrote a record twice (``tests/integration/kafka_logs.py``), on records made up here."""

from __future__ import annotations

import doctest

import tests.integration.kafka_logs as kafka_logs
from tests.integration.kafka_logs import LoggedRecord, repeats


def record(producer_id: int, payload: str) -> LoggedRecord:
    return LoggedRecord(0, producer_id, payload)


def test_a_value_one_producer_wrote_twice_is_a_repeat_and_two_producers_equal_values_are_not() -> None:
    got = repeats([record(3, "a"), record(3, "a"), record(3, "a"), record(4, "a"), record(3, "b")])
    assert got == {(3, "a"): 2}


def test_acker_fails_written_again_are_passed_over_but_a_record_mixing_a_fail_with_other_ops_is_not() -> None:
    fail = '[[2,2115967146140876291,"[count] outputs lost (the broker did not take them)"]]'
    mixed = '[[2,11,"lost"],[1,12,99]]'
    ack = "[[1,12,99]]"
    got = repeats([record(2000, fail), record(2000, fail), record(2000, mixed), record(2000, mixed), record(2000, ack), record(2000, ack)])
    assert got == {(2000, mixed): 1, (2000, ack): 1}
    assert repeats([record(2000, fail), record(2000, fail), record(2000, fail), record(2000, ack), record(2000, ack)], fails=True) == {(2000, fail): 2}


def test_a_value_that_is_not_json_or_not_ops_counts_as_any_other() -> None:
    assert repeats([record(1, "[[2, oops"), record(1, "[[2, oops"), record(1, '"[[2]]"'), record(1, '"[[2]]"')]) == {(1, "[[2, oops"): 1, (1, '"[[2]]"'): 1}


def test_the_module_examples_run() -> None:
    result = doctest.testmod(kafka_logs)
    assert result.attempted > 0 and result.failed == 0
