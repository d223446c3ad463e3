"""The transactional spout's range reader and its read-ahead, broker-free: a fake consumer that
hands over one partition's prefetched records in long runs, as librdkafka does, so a partition
runs far ahead of its range; every read still returns exactly its range, in offset order, and a
replay seeks back."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.kafka.fetch_gaps import FakeRecord
from streams.transactional import range_reader
from streams.transactional.range_reader import RangeReader, ReadAhead
from streams.wire.naming import TP

A: TP = ("t", 0)
B: TP = ("t", 1)


class RunsConsumer:
    """Serves ``sizes[tp]`` records per partition from each partition's position; each call
    hands over up to ``run`` records of one partition, and ``burst`` calls in a row go to the
    same partition, so one partition's records arrive well before the other's. A paused
    partition hands over nothing (librdkafka drops what it prefetched for it; here nothing is
    prefetched, so it resumes where it stopped)."""

    def __init__(self, sizes: dict[TP, int], run: int, burst: int = 1) -> None:
        self.sizes = sizes
        self.run = run
        self.burst = burst
        self.pos: dict[TP, int] = {}
        self.calls = 0
        self.seeks: list[tuple[TP, int]] = []
        self.consumed = 0
        self.paused: set[TP] = set()
        self.pauses = 0

    def assign(self, tps: list[TopicPartition]) -> None:
        self.pos = {(tp.topic, tp.partition): 0 for tp in tps}

    def seek(self, tp: TopicPartition) -> None:
        self.pos[(tp.topic, tp.partition)] = tp.offset
        self.seeks.append(((tp.topic, tp.partition), tp.offset))

    def position(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.pos[(tp.topic, tp.partition)]) for tp in tps]

    def pause(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self.paused.add((tp.topic, tp.partition))
            self.pauses += 1

    def resume(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self.paused.discard((tp.topic, tp.partition))

    def consume(self, n: int, timeout: float) -> list[FakeRecord]:
        tps = sorted(self.pos)
        turn = self.calls // self.burst
        self.calls += 1
        for i in range(len(tps)):
            tp = tps[(turn + i) % len(tps)]
            at = self.pos[tp]
            if at < self.sizes[tp] and tp not in self.paused:
                take = min(n, self.run, self.sizes[tp] - at)
                self.pos[tp] = at + take
                self.consumed += take
                return [FakeRecord(tp[0], tp[1], o) for o in range(at, at + take)]
        return []

    def poll(self, timeout: float) -> FakeRecord | None:
        got = self.consume(1, timeout)
        return got[0] if got else None

    def get_watermark_offsets(self, tp: TopicPartition, cached: bool = False) -> tuple[int, int]:
        return 0, self.sizes[(tp.topic, tp.partition)]

    def close(self) -> None:
        pass


def reader(monkeypatch: pytest.MonkeyPatch, consumer: RunsConsumer, max_ahead: int = 100_000) -> RangeReader:
    monkeypatch.setattr(range_reader, "new_consumer", lambda conf: consumer)
    return RangeReader({"group.id": "g"}, [A, B], "rows", max_ahead=max_ahead)


def offsets(got: dict[TP, list[Any]]) -> dict[TP, list[int]]:
    return {tp: [m.offset() for m in ms] for tp, ms in got.items()}


def test_consecutive_batches_read_each_record_once_though_a_partition_runs_far_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = RunsConsumer({A: 5000, B: 5000}, run=1000, burst=4)
    r = reader(monkeypatch, consumer)
    most = 0
    for first in range(0, 5000, 250):
        got = r.read({A: (first, first + 250), B: (first, first + 250)})
        assert offsets(got) == {A: list(range(first, first + 250)), B: list(range(first, first + 250))}
        most = max(most, r.ahead.size(A), r.ahead.size(B))
    assert most >= 3000  # a partition ran thousands of records ahead of its range
    assert consumer.seeks == [] and consumer.pauses == r.pauses == 0  # batches follow each other: the consumer only read on
    assert consumer.consumed == 10000  # nothing fetched twice


def test_a_partition_far_ahead_is_paused_until_a_read_needs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = RunsConsumer({A: 20000, B: 20000}, run=500, burst=10)
    r = reader(monkeypatch, consumer, max_ahead=1500)
    most = 0
    for first in range(0, 20000, 400):
        got = r.read({A: (first, first + 400), B: (first, first + 400)})
        assert offsets(got) == {A: list(range(first, first + 400)), B: list(range(first, first + 400))}
        most = max(most, r.ahead.size(A), r.ahead.size(B))
    assert r.pauses == consumer.pauses > 0
    assert most <= 1500 + 1000  # the bound, plus one consume call (1,000 records) past it
    assert consumer.consumed == 40000 and consumer.seeks == []
    assert not consumer.paused or all(r.ahead.size(tp) > 0 for tp in consumer.paused)


def test_a_replay_seeks_back_and_reads_the_same_records_again(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = RunsConsumer({A: 3000, B: 3000}, run=700)
    r = reader(monkeypatch, consumer)
    first = r.read({A: (0, 400), B: (0, 400)})
    r.read({A: (400, 800), B: (400, 800)})
    again = r.read({A: (0, 400), B: (0, 400)})  # the batch of txid 1 replayed
    assert offsets(again) == offsets(first)
    assert sorted(consumer.seeks) == [(A, 0), (B, 0)]
    after = r.read({A: (400, 800), B: (400, 800)})  # the read-ahead of the replay serves the next batch
    assert offsets(after) == {A: list(range(400, 800)), B: list(range(400, 800))}
    assert len(consumer.seeks) == 2


def test_read_ahead_example_and_duplicates() -> None:
    ra = ReadAhead([A])
    ra.add(A, [FakeRecord("t", 0, o) for o in (3, 4, 5)])
    ra.add(A, [FakeRecord("t", 0, o) for o in (4, 5, 6, 8)])  # 4, 5 fetched twice; 7 a gap (a transaction marker)
    assert [m.offset() for m in ra.take(A, 4, 8)] == [4, 5, 6]  # 3 is below the range: dropped
    assert [m.offset() for m in ra.take(A, 8, 20)] == [8]
    assert ra.size(A) == 0
    ra.clear(A)
    ra.add(A, [FakeRecord("t", 0, 0)])  # after a seek back, lower offsets are kept again
    assert ra.size(A) == 1


@settings(max_examples=200, deadline=None)
@given(
    fetches=st.lists(st.lists(st.integers(0, 60), max_size=12), max_size=8),
    ranges=st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)), max_size=8),
)
def test_take_returns_the_kept_records_of_a_range_in_order(fetches: list[list[int]], ranges: list[tuple[int, int]]) -> None:
    """Against a model: keep offsets above the highest kept; a take returns the kept ones in
    [first, end) and drops the ones below ``end``. Each fetch is in increasing offset order (as a
    consumer hands a partition over), with gaps, and may overlap what came before."""
    ra = ReadAhead([A])
    model: list[int] = []
    top = -1
    it = iter(ranges)
    for fetch in (sorted(set(f)) for f in fetches):
        ra.add(A, [FakeRecord("t", 0, o) for o in fetch])
        for o in fetch:
            if o > top:
                model.append(o)
                top = o
        step = next(it, None)
        if step is not None:
            first, span = step
            end = first + span
            got = [m.offset() for m in ra.take(A, first, end)]
            assert got == [o for o in model if first <= o < end]
            model = [o for o in model if o >= end]
        assert ra.size(A) == len(model)
