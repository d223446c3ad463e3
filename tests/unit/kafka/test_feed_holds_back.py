"""The spout's feed holds back while its sources are full, and never pauses its consumer
(streams.kafka.feed.sources_full): pausing drops librdkafka's prefetched records."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.kafka.feed import FULL_BATCHES, FedTask, SourceFeed, sources_full
from streams.kafka.fetch_gaps import FakeRecord


class PrefetchingConsumer:
    """A consumer over one partition of ``n`` records; counts consume calls and any pause."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.position = 0
        self.consumes = 0
        self.paused = 0

    def consume(self, num: int, timeout_s: float) -> list[FakeRecord]:
        self.consumes += 1
        out = [FakeRecord("in", 0, o) for o in range(self.position, min(self.n, self.position + num))]
        self.position += len(out)
        return out

    def pause(self, tps: Any) -> None:
        self.paused += 1

    def resume(self, tps: Any) -> None:
        self.paused += 1


class SlowSource:
    """Buffers records; the test drains a few per poll, as a spout held back by its bound."""

    def __init__(self) -> None:
        self.buf: list[FakeRecord] = []
        self.emitted: list[int] = []

    def on_records(self, msgs: list[FakeRecord]) -> None:
        self.buf.extend(msgs)

    @property
    def buffered(self) -> int:
        return len(self.buf)

    def emit(self, k: int) -> None:
        self.emitted += [m.offset() for m in self.buf[:k]]
        del self.buf[:k]


def feed_over(consumer: PrefetchingConsumer, source: SlowSource, batch: int) -> SourceFeed:
    feed = SourceFeed("reader", "t", source, 1, "unused:9092", consumer, batch)  # type: ignore[arg-type]
    task = FedTask(0, source, [("in", 0)])  # type: ignore[arg-type]
    feed.tasks[0] = task
    feed.owner[("in", 0)] = task
    feed.gaps.expect("in", 0, 0)
    return feed


def test_the_mark() -> None:
    assert not sources_full(FULL_BATCHES * 500, 500)
    assert sources_full(FULL_BATCHES * 500 + 1, 500)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 3000), st.lists(st.integers(0, 2000), min_size=1, max_size=60), st.integers(1, 800))
def test_a_held_back_spout_gets_every_record_once_in_order_with_its_buffer_bounded(n: int, drains: list[int], batch: int) -> None:
    consumer, source = PrefetchingConsumer(n), SlowSource()
    feed = feed_over(consumer, source, batch)
    polls = 0
    while len(source.emitted) < n:
        full = sources_full(source.buffered, batch)
        before = consumer.consumes
        feed.poll(0.0)
        assert (consumer.consumes == before) == full  # held back exactly while full
        assert source.buffered <= FULL_BATCHES * batch + batch  # at most one batch past the mark
        source.emit(drains[polls % len(drains)] or 1)
        polls += 1
    assert source.emitted == list(range(n))  # nothing lost, nothing twice
    assert consumer.paused == 0  # the prefetch queue was never dropped


class SilentBroker(PrefetchingConsumer):
    """A consumer whose metadata requests time out (a broker paused, restarting or cut off)."""

    def __init__(self) -> None:
        super().__init__(0)
        self.asked = 0

    def list_topics(self, timeout: float) -> Any:
        from confluent_kafka import KafkaError, KafkaException

        self.asked += 1
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get metadata: Local: Timed out"))


def test_a_broker_that_does_not_answer_a_refresh_never_stops_the_spout() -> None:
    consumer = SilentBroker()
    feed = feed_over(consumer, SlowSource(), 10)
    feed.refresh(100.0)  # the failure was fatal to the spout executor (seen on a host cut off for 15 s)
    feed.refresh(101.0)  # not due yet
    feed.refresh(100.0 + SourceFeed.REFRESH_SECS)  # tried again at the next refresh
    assert consumer.asked == 2
