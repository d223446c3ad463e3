"""The integration tests' check that no producer wrote a record twice (``tests/integration/kafka_logs.py``), on records made up here."""

from __future__ import annotations

import doctest

import tests.integration.kafka_logs as kafka_logs
from tests.integration.kafka_logs import LoggedRecord, faults, only_fails, repeats


def record(producer_id: int, payload: str) -> LoggedRecord:
    return LoggedRecord(0, producer_id, payload)


def test_a_value_one_producer_wrote_twice_is_a_repeat_and_two_producers_equal_values_are_not() -> None:
    got = repeats([record(3, "a"), record(3, "a"), record(3, "a"), record(4, "a"), record(3, "b")])
    assert got == {(3, "a"): 2}


def test_a_value_of_acker_fails_only_is_no_fault_but_a_record_mixing_a_fail_with_other_ops_is() -> None:
    assert only_fails('[[2,2115967146140876291,"[count] outputs lost (the broker did not take them)"]]')
    assert only_fails('[[2,11],[2,12,"why"]]')
    assert not only_fails('[[2,11,"lost"],[1,12,99]]')
    assert not only_fails("[[1,12,99]]")
    assert not only_fails("[[0,12,99,3]]")


def test_faults_counts_repeated_values_but_only_tallies_repeated_fails() -> None:
    fail = '[[2,2115967146140876291,"[count] outputs lost (the broker did not take them)"]]'
    mixed = '[[2,11,"lost"],[1,12,99]]'
    ack = "[[1,12,99]]"
    records = [record(2000, fail), record(2000, fail), record(2000, mixed), record(2000, mixed), record(2000, ack), record(2000, ack), record(2001, fail)]
    assert faults(records) == ({(2000, mixed): 1, (2000, ack): 1}, 1)
    assert faults([record(1, fail), record(2, fail)]) == ({}, 0)


def test_a_value_that_is_not_json_or_not_ops_is_not_fails_only() -> None:
    assert not only_fails("[[2, oops")
    assert not only_fails('"[[2]]"')
    assert not only_fails("[[]]")
    assert not only_fails('[1,"default","split",0,0,["the"],[5,9]]')


def test_the_module_examples_run() -> None:
    result = doctest.testmod(kafka_logs)
    assert result.attempted > 0 and result.failed == 0
