"""A spout's feed starts past a replaced owner's late offset commit, and names its own epoch in every commit (streams.wire.commits)."""

from __future__ import annotations

from typing import Any

import jsonschema
from confluent_kafka import TopicPartition

from streams.kafka.feed import SourceFeed
from streams.monitoring.spout_ledger import TaskLedger
from streams.wire.commits import commit_epoch, commit_metadata
from tests.unit.test_schemas import schema


class CommittedConsumer:
    """Answers ``committed()`` with given ``(offset, metadata)`` per partition; records commits."""

    def __init__(self, committed: dict[int, tuple[int, str]]) -> None:
        self.given = committed
        self.commits: list[TopicPartition] = []

    def committed(self, tps: list[TopicPartition], timeout: float = 0.0) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, *self.given[tp.partition]) for tp in tps if tp.partition in self.given]

    def commit(self, offsets: list[TopicPartition], asynchronous: bool = True) -> None:
        self.commits += offsets


class Source:
    def committable(self) -> dict[tuple[str, int], int]:
        return {("in", 0): 60_000, ("in", 1): 900}


def test_a_late_commit_of_an_older_epoch_is_passed_over_and_counted_and_commits_name_this_life() -> None:
    consumer = CommittedConsumer({0: (7_736, commit_metadata(100)), 1: (880, commit_metadata(300))})
    feed = SourceFeed("lines", "t", Source(), 1, "unused:9092", consumer, 500, epoch=500)  # type: ignore[arg-type]
    last = TaskLedger("lines", 0, epoch=300, commits={"in[0]": 53_000, "in[1]": 880})
    feed.add(0, Source(), last.epoch, last.commits)  # type: ignore[arg-type]
    assert feed._committed([("in", 0), ("in", 1)]) == {("in", 0): 53_000, ("in", 1): 880}
    assert feed.fenced_commits == 1
    # the group's offset is set right at once, whether or not this life reads anything more (it stayed at the late one: squall status, lag)
    assert [(tp.partition, tp.offset, commit_epoch(tp.metadata)) for tp in consumer.commits] == [(0, 53_000, 500)]
    consumer.commits.clear()
    task = feed.tasks[0]
    for tp in (("in", 0), ("in", 1)):
        feed.owner[tp] = task
    feed.commit()
    assert {(tp.partition, tp.offset, commit_epoch(tp.metadata)) for tp in consumer.commits} == {(0, 60_000, 500), (1, 900, 500)}
    assert task.committed == {("in", 0): 60_000, ("in", 1): 900}


def test_a_ledger_keeps_its_confirmed_commits_across_lives_and_validates() -> None:
    ledger = TaskLedger("lines", 3, epoch=300)
    ledger.committed({"in[0]": 53_000})
    seq = ledger.seq
    ledger.committed({"in[0]": 52_000})  # never backwards
    assert ledger.seq == seq and ledger.commits == {"in[0]": 53_000} and ledger.dirty
    record: Any = ledger.to_json()
    jsonschema.validate(record, schema("ledger.schema.json"))
    again = TaskLedger.from_json(record)
    assert (again.epoch, again.commits) == (300, {"in[0]": 53_000})
    assert again.next_life().commits == {"in[0]": 53_000}
    old = {k: v for k, v in record.items() if k not in ("epoch", "commits")}  # written before epochs
    assert (TaskLedger.from_json(old).epoch, TaskLedger.from_json(old).commits) == (0, {})
