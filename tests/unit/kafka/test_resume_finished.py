"""A new life of a KafkaSpout task does not replay what an earlier life finished above the committed offset.

A contiguous commit stops at the oldest tree in flight; at each commit the task's ledger also
keeps the finished ranges above it (streams.wire.commits), and the next life takes those
records as finished without emitting them. Driven with a real :class:`KafkaSpout`, the ledger
record's JSON and the feed, through stand-in records and consumers.
"""

from __future__ import annotations

from typing import Any

import jsonschema
from confluent_kafka import TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.kafka.feed import SourceFeed
from streams.kafka.fetch_gaps import FakeRecord as Msg
from streams.kafka.source import KafkaMessageId, KafkaRecordsId
from streams.monitoring.spout_ledger import TaskLedger
from streams.wire.commits import MAX_FINISHED_RANGES
from tests.unit.kafka.test_record_trees import open_spout
from tests.unit.test_schemas import schema


def offsets_of(mid: Any) -> tuple[int, ...]:
    return mid.offsets if isinstance(mid, KafkaRecordsId) else (mid.offset,)


def emit_all(spout: Any, rec: Any) -> list[Any]:
    before = len(rec.calls)
    while spout.buffered:
        spout.next_tuple()
    return [mid for _, mid, _ in rec.calls[before:]]


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 120),
    tree_records=st.integers(1, 8),
    next_tree_records=st.integers(1, 8),
    fetches=st.lists(st.integers(1, 20), min_size=1, max_size=30),
    acked=st.lists(st.booleans(), min_size=1, max_size=120),
    order=st.randoms(use_true_random=False),
)
def test_the_next_life_emits_exactly_what_the_last_did_not_finish(
    n: int, tree_records: int, next_tree_records: int, fetches: list[int], acked: list[bool], order: Any
) -> None:
    """Each life makes its own trees (its tree size, and what each fetch brought): a range the last life finished may start inside the next life's run."""
    first, rec1, _ = open_spout(tree_records)
    trees: list[Any] = []
    at, i = 0, 0
    while at < n:  # fetched in chunks: a tree never spans two fetches' records here
        size = min(fetches[i % len(fetches)], n - at)
        first.on_records([Msg("t", 0, off, f"l{off}".encode()) for off in range(at, at + size)])
        trees += emit_all(first, rec1)
        at, i = at + size, i + 1
    done = [mid for i, mid in enumerate(trees) if acked[i % len(acked)]]
    order.shuffle(done)
    for mid in done:
        first.ack(mid)
    finished = {off for mid in done for off in offsets_of(mid)}
    committed = first.committable()[("t", 0)]
    assert committed == min(set(range(n)) - finished, default=n)  # contiguous: up to the oldest unfinished
    ledger = TaskLedger("lines", 0, epoch=42)
    ledger.committed({"t[0]": committed})
    ledger.keep_finished(first.finished_above(MAX_FINISHED_RANGES))
    record = ledger.to_json()
    jsonschema.validate(record, schema("ledger.schema.json"))
    kept = TaskLedger.from_json(record).next_life().resumable(("t", 0), committed)
    # the next life: from the committed offset, told what the ledger kept
    second, rec2, _ = open_spout(next_tree_records)
    second.resume_finished(("t", 0), kept)
    second.on_records([Msg("t", 0, off, f"l{off}".encode()) for off in range(committed, n)])
    replayed = emit_all(second, rec2)
    again = sorted(off for mid in replayed for off in offsets_of(mid))
    assert again == sorted(set(range(committed, n)) - finished)  # each unfinished record once, no finished one
    assert second.counters.resumed_finished == len(finished - set(range(committed)))
    for mid in replayed:
        second.ack(mid)
    assert second.committable() == ({("t", 0): n} if committed < n else {})  # and the partition commits to its end


def test_ranges_beyond_the_ledger_s_bound_are_replayed_not_lost() -> None:
    spout, rec, _ = open_spout(tree_records=1)
    spout.on_records([Msg("t", 0, off, b"x") for off in range(2001)])
    trees = emit_all(spout, rec)
    for mid in trees[1::2]:  # every other record: 1000 ranges of one
        spout.ack(mid)
    ranges = spout.finished_above(MAX_FINISHED_RANGES)[("t", 0)]
    assert len(ranges) == MAX_FINISHED_RANGES and ranges[0] == (1, 2)  # the lowest
    second, rec2, _ = open_spout(tree_records=1)
    second.resume_finished(("t", 0), ranges)
    second.on_records([Msg("t", 0, off, b"x") for off in range(2001)])
    again = [mid.offset for mid in emit_all(second, rec2)]
    assert len(again) == 2001 - MAX_FINISHED_RANGES and KafkaMessageId("t", 0, 2000).offset in again


def test_a_life_that_dies_before_reaching_what_an_earlier_one_finished_still_names_it() -> None:
    spout, rec, _ = open_spout(tree_records=1)
    spout.resume_finished(("t", 0), [(5, 8), (20, 30)])
    spout.on_records([Msg("t", 0, off, b"x") for off in range(10)])  # it reaches 10 only
    emit_all(spout, rec)
    assert spout.counters.resumed_finished == 3
    assert spout.finished_above(MAX_FINISHED_RANGES) == {("t", 0): [(5, 8), (20, 30)]}  # 0-4 and 8-9 in flight


class CommittedConsumer:
    def __init__(self, committed: dict[int, tuple[int, str]]) -> None:
        self.given = committed

    def committed(self, tps: list[TopicPartition], timeout: float = 0.0) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, *self.given[tp.partition]) for tp in tps if tp.partition in self.given]


def test_the_feed_hands_a_new_life_the_finished_ranges_its_ledger_kept_from_where_it_starts() -> None:
    spout, rec, _ = open_spout(tree_records=1)
    feed = SourceFeed("lines", "t", spout, 1, "unused:9092", CommittedConsumer({}), 500, epoch=8)
    last = TaskLedger("lines", 0, epoch=7)
    last.keep_finished({("t", 0): [(90, 95), (103, 105)], ("t", 1): [(0, 4)]})
    feed.add(0, spout, last.epoch, {"t[0]": 100}, last.resumable)
    feed._resume_finished(feed.tasks[0], ("t", 0), 100)
    spout.on_records([Msg("t", 0, off, b"x") for off in range(100, 110)])
    assert [mid.offset for mid in emit_all(spout, rec)] == [100, 101, 102, 105, 106, 107, 108, 109]
    feed._resume_finished(feed.tasks[0], ("t", 1), 2)
    spout.on_records([Msg("t", 1, off, b"x") for off in range(2, 6)])
    assert [mid.offset for mid in emit_all(spout, rec)] == [4, 5]
