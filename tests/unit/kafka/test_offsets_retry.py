from __future__ import annotations

from streams import RetryPolicy
from streams.kafka.offsets import OffsetTracker
from streams.kafka.retry import RetryQueue


def test_commits_only_the_contiguous_run_of_finished_offsets() -> None:
    t = OffsetTracker(100)
    for off in (100, 101, 102, 105, 106):  # 103-104 are a gap (e.g. a transaction marker)
        t.emitted(off)
    assert t.committable == 100
    t.finished(101)
    t.finished(102)
    assert t.committable == 100  # 100 still in flight
    t.finished(100)
    assert t.committable == 105
    t.finished(106)
    assert t.committable == 105
    t.finished(105)
    assert t.committable == 107 and t.in_flight == 0


def test_replayed_offsets_are_not_tracked_twice() -> None:
    t = OffsetTracker(0)
    t.emitted(0)
    t.emitted(0)
    assert t.in_flight == 1


def test_exponential_backoff_with_injected_clock() -> None:
    now = [0.0]
    policy = RetryPolicy(initial_delay_s=0.5, multiplier=2.0, max_delay_s=3.0, max_retries=4)
    assert [policy.delay(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    q = RetryQueue(policy, clock=lambda: now[0])
    q.schedule("a", 1)
    q.schedule("b", 3)
    assert q.pop_due() is None
    now[0] = 0.5
    assert q.pop_due() == "a"
    now[0] = 1.9
    assert q.pop_due() is None
    now[0] = 2.0
    assert q.pop_due() == "b"
    assert not policy.exhausted(4) and policy.exhausted(5)
