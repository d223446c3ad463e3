"""A fetch that skips offsets of an internal topic is fetched again (streams.kafka.fetch_gaps).

The simulated consumer below answers fetches as the embedded broker did under concurrent
producers: sometimes with a later batch while an earlier one is not yet readable. Whatever
the answers, every offset is processed once, in order, as long as each hole fills within the
patience.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.kafka.fetch_gaps import FakeRecord, FetchGaps, consume_available


def offsets(records: list[FakeRecord]) -> list[int]:
    return [r.offset() for r in records]


def test_a_hole_is_fetched_again_and_the_later_records_of_the_call_wait_for_it() -> None:
    gaps = FetchGaps("parse", clock=lambda: 0.0)
    keep, seek = gaps.check([FakeRecord("t", 0, 7), FakeRecord("t", 1, 3), FakeRecord("t", 0, 9), FakeRecord("t", 1, 4), FakeRecord("t", 0, 8)])
    assert offsets(keep) == [7, 3, 4] and seek == [("t", 0, 8)]  # partition 1 goes on
    gaps.expect("t", 0, 8)  # the caller seeked
    keep, seek = gaps.check([FakeRecord("t", 0, 8), FakeRecord("t", 0, 9)])
    assert offsets(keep) == [8, 9] and seek == [] and gaps.refetched == 1 and gaps.passed_over == 0


def test_records_fetched_again_after_a_seek_are_not_processed_twice() -> None:
    gaps = FetchGaps("acker", clock=lambda: 0.0)
    gaps.expect("t", 0, 5)
    keep, seek = gaps.check([FakeRecord("t", 0, 3), FakeRecord("t", 0, 4), FakeRecord("t", 0, 5)])
    assert offsets(keep) == [5] and seek == [] and gaps.dropped == 2


def test_a_hole_still_there_after_the_patience_is_passed_over_once() -> None:
    now = [0.0]
    gaps = FetchGaps("parse", patience_s=2.0, clock=lambda: now[0])
    gaps.expect("t", 0, 0)
    for t in (0.0, 1.0, 1.9):  # fetched again while within the patience
        now[0] = t
        keep, seek = gaps.check([FakeRecord("t", 0, 10)])
        assert keep == [] and seek == [("t", 0, 0)]
    now[0] = 2.5
    keep, seek = gaps.check([FakeRecord("t", 0, 10), FakeRecord("t", 0, 11)])
    assert offsets(keep) == [10, 11] and seek == [] and gaps.passed_over == 1
    now[0] = 3.0  # a new hole later starts its own patience
    keep, seek = gaps.check([FakeRecord("t", 0, 20)])
    assert keep == [] and seek == [("t", 0, 12)]


def test_error_records_pass_through() -> None:
    class Err(FakeRecord):
        def error(self) -> str:  # type: ignore[override]
            return "broker down"

    gaps = FetchGaps("parse", clock=lambda: 0.0)
    keep, seek = gaps.check([Err("t", 0, -1)])
    assert len(keep) == 1 and seek == []


class RacyLog:
    """One partition of ``n`` records, fetched by position; ``hidden`` offsets are not yet
    readable for their first ``k`` fetches (a batch still being written), and a fetch from a
    hidden offset answers with the next readable one, as the embedded broker did."""

    def __init__(self, n: int, hidden: dict[int, int], batch: int) -> None:
        self.n, self.hidden, self.batch = n, dict(hidden), batch
        self.position = 0

    def fetch(self) -> list[FakeRecord]:
        out: list[FakeRecord] = []
        off = self.position
        while off < self.n and len(out) < self.batch:
            if self.hidden.get(off, 0) > 0:
                self.hidden[off] -= 1
                off += 1  # the broker answers with what it has after the hole
                continue
            out.append(FakeRecord("t", 0, off))
            off += 1
        if out:
            self.position = out[-1].offset() + 1  # librdkafka moves past what it was given
        return out

    def seek(self, offset: int) -> None:
        self.position = offset


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 300),
    hidden=st.dictionaries(st.integers(0, 299), st.integers(1, 4), max_size=30),
    batch=st.integers(1, 50),
)
def test_every_offset_is_processed_once_in_order_whatever_the_fetches_skip(n: int, hidden: dict[int, int], batch: int) -> None:
    log = RacyLog(n, hidden, batch)
    gaps = FetchGaps("parse", clock=lambda: 0.0)  # no time passes: every hole is fetched again
    gaps.expect("t", 0, 0)
    done: list[int] = []
    for _ in range(10 * n + 100):
        keep, seeks = gaps.check(log.fetch())
        done += offsets(keep)
        for _t, _p, off in seeks:
            log.seek(off)
            gaps.expect("t", 0, off)
        if len(done) == n:
            break
    assert done == list(range(n))
    assert gaps.passed_over == 0


def test_one_partition_whole_calls_take_the_fast_path_and_holes_do_not() -> None:
    gaps = FetchGaps("parse", clock=lambda: 0.0, single=True)
    gaps.expect("t", 0, 100)
    whole = [FakeRecord("t", 0, o) for o in range(100, 150)]
    assert gaps.check(whole) == (whole, [])
    holed = [FakeRecord("t", 0, o) for o in (150, 151, 160)]
    keep, seek = gaps.check(holed)
    assert offsets(keep) == [150, 151] and seek == [("t", 0, 152)]


@settings(max_examples=100, deadline=None)
@given(hidden=st.dictionaries(st.integers(0, 199), st.integers(1, 3), max_size=20), batch=st.integers(1, 40))
def test_the_fast_path_changes_nothing(hidden: dict[int, int], batch: int) -> None:
    results = []
    for single in (False, True):
        log = RacyLog(200, hidden, batch)
        gaps = FetchGaps("parse", clock=lambda: 0.0, single=single)
        gaps.expect("t", 0, 0)
        done: list[int] = []
        for _ in range(3000):
            keep, seeks = gaps.check(log.fetch())
            done += offsets(keep)
            for _t, _p, off in seeks:
                log.seek(off)
                gaps.expect("t", 0, off)
            if len(done) == 200:
                break
        results.append((done, gaps.refetched))
    assert results[0] == results[1] and results[0][0] == list(range(200))


def test_a_source_hole_is_fetched_again_once_then_passed_over() -> None:
    gaps = FetchGaps("lines", clock=lambda: 0.0, max_refetches=1)  # a transaction marker at offset 5
    gaps.expect("in", 0, 5)
    keep, seek = gaps.check([FakeRecord("in", 0, 6)])
    assert keep == [] and seek == [("in", 0, 5)]
    keep, seek = gaps.check([FakeRecord("in", 0, 6), FakeRecord("in", 0, 7)])
    assert offsets(keep) == [6, 7] and seek == [] and gaps.passed_over == 1 and gaps.refetched == 1


def test_consume_seeks_the_consumer_back_and_expects_the_offset() -> None:
    class Consumer:
        def __init__(self) -> None:
            self.answers = [[FakeRecord("t", 0, 0), FakeRecord("t", 0, 3)], [FakeRecord("t", 0, 1), FakeRecord("t", 0, 2), FakeRecord("t", 0, 3)]]
            self.seeks: list[tuple[str, int, int]] = []

        def consume(self, n: int, timeout_s: float) -> list[FakeRecord]:
            return self.answers.pop(0)

        def seek(self, tp: Any) -> None:
            self.seeks.append((tp.topic, tp.partition, tp.offset))

    consumer = Consumer()
    gaps = FetchGaps("parse", clock=lambda: 0.0)
    assert offsets(gaps.consume(consumer, 500, 0.0)) == [0]
    assert consumer.seeks == [("t", 0, 1)]
    assert offsets(gaps.consume(consumer, 500, 0.0)) == [1, 2, 3]


class MarkerLog:
    """A partition whose offsets 5 and 11 hold transaction markers: a fetch never returns them.
    ``consume`` answers up to 4 records from the position; ``seek`` moves the position."""

    def __init__(self) -> None:
        self.records = [o for o in range(16) if o not in (5, 11)]
        self.position = 0
        self.seeks = 0

    def consume(self, n: int, timeout_s: float) -> list[FakeRecord]:
        got = [FakeRecord("src", 0, o) for o in self.records if o >= self.position][:4]
        if got:
            self.position = (got[-1].offset() or 0) + 1
        return got

    def seek(self, tp: Any) -> None:
        self.seeks += 1
        self.position = tp.offset


def test_consume_passes_over_a_real_hole_after_one_refetch() -> None:
    """Through consume() (which seeks): a transaction marker is fetched again once, then passed
    over, and reading goes on. (Before the fix, consume() forgot the hole at each seek and
    fetched a marker again for ever: found by the first Apache Kafka run.)"""
    log, gaps = MarkerLog(), FetchGaps("lines", clock=lambda: 0.0, max_refetches=1)
    gaps.expect("src", 0, 0)
    done: list[int] = []
    for _ in range(50):
        done += offsets(gaps.consume(log, 500, 0.0))
        if len(done) == 14:
            break
    assert done == log.records
    assert log.seeks == 2 and gaps.refetched == 2 and gaps.passed_over == 2


def test_consume_passes_over_a_real_hole_after_the_patience_on_an_internal_topic() -> None:
    now = [0.0]
    log, gaps = MarkerLog(), FetchGaps("count", clock=lambda: now[0], patience_s=2.0)
    gaps.expect("src", 0, 0)
    done: list[int] = []
    for _ in range(200):
        now[0] += 0.1
        done += offsets(gaps.consume(log, 500, 0.0))
        if len(done) == 14:
            break
    assert done == log.records and gaps.passed_over == 2
    assert 2 * 19 <= log.seeks <= 2 * 21  # fetched again for ~2 s (a seek per 0.1 s), per hole


def test_consume_available_returns_at_the_first_record_with_what_is_queued_behind_it() -> None:
    class Consumer:
        """consume(n, t) as librdkafka's: it would wait out t for n records; poll(t) returns the first."""

        def __init__(self) -> None:
            self.queue: list[FakeRecord] = []
            self.calls: list[tuple[str, int, float]] = []
            self.arrive = [FakeRecord("t", 0, 0), FakeRecord("t", 0, 1), FakeRecord("t", 0, 2)]

        def consume(self, n: int, timeout_s: float) -> list[FakeRecord]:
            self.calls.append(("consume", n, timeout_s))
            got, self.queue = self.queue[:n], self.queue[n:]
            return got

        def poll(self, timeout_s: float) -> FakeRecord | None:
            self.calls.append(("poll", 1, timeout_s))
            arrived, self.arrive = self.arrive, []  # they arrive while poll waits
            self.queue = arrived[1:]
            return arrived[0] if arrived else None

    c = Consumer()
    got = consume_available(c, 500, 0.025)
    assert offsets(got) == [0, 1, 2] and c.calls == [("consume", 500, 0), ("poll", 1, 0.025), ("consume", 499, 0)]
    assert consume_available(c, 500, 0.025) == [] and c.calls[-1] == ("poll", 1, 0.025)  # nothing: one wait, no more
    c.queue = [FakeRecord("t", 0, 5), FakeRecord("t", 0, 6)]
    assert offsets(consume_available(c, 500, 0.025)) == [5, 6] and c.calls[-1] == ("consume", 500, 0)  # queued: no wait at all
