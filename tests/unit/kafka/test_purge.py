"""Purger: only committed offsets are deleted, at most once per interval, failures retried, a broker that cannot purge turns it off."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.kafka.purge import Purger


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class Admin:
    """delete_records as the broker answers it: the new low watermark is the offset asked (or an error)."""

    def __init__(self, error: str | None = None) -> None:
        self.calls: list[dict[tuple[str, int], int]] = []
        self.error = error
        self.low: dict[tuple[str, int], int] = {}

    def delete_records(self, tps: list[Any], **kwargs: Any) -> dict[Any, Future[Any]]:
        self.calls.append({(tp.topic, tp.partition): tp.offset for tp in tps})
        out: dict[Any, Future[Any]] = {}
        for tp in tps:
            f: Future[Any] = Future()
            if self.error:
                f.set_exception(RuntimeError(self.error))
            else:
                key = (tp.topic, tp.partition)
                self.low[key] = max(self.low.get(key, 0), tp.offset)
                f.set_result(SimpleNamespace(low_watermark=self.low[key]))
            out[tp] = f
        return out


def test_it_purges_committed_offsets_once_per_interval() -> None:
    clock, admin = Clock(), Admin()
    p = Purger("count", 30.0, admin, clock)
    p.committed([("t", 0, 100), ("t", 1, 5)])
    assert p.maybe_purge() == 0 and admin.calls == []  # not due yet
    clock.t = 30.0
    assert p.maybe_purge() == 2
    assert admin.calls == [{("t", 0): 100, ("t", 1): 5}]
    p.committed([("t", 0, 90)])  # an older commit never lowers the mark
    clock.t = 61.0
    assert p.maybe_purge() == 0  # nothing moved
    p.committed([("t", 1, 9)])
    clock.t = 92.0
    assert p.maybe_purge() == 1 and admin.calls[-1] == {("t", 1): 9}
    p.maybe_purge()
    assert p.purged_records == 109 and p.failures == 0


def test_a_failed_purge_is_retried_and_an_unsupported_broker_turns_it_off() -> None:
    clock, admin = Clock(), Admin(error='KafkaError{code=_TRANSPORT,val=-195,str="Disconnected"}')
    p = Purger("count", 1.0, admin, clock)
    p.committed([("t", 0, 10)])
    clock.t = 1.0
    p.maybe_purge()
    p.maybe_purge()  # reads the answer
    assert not p.enabled and p.failures == 1
    clock.t = 5.0
    assert p.maybe_purge() == 0 and len(admin.calls) == 1

    clock2, flaky = Clock(), Admin(error="KafkaError{code=REQUEST_TIMED_OUT}")
    q = Purger("acker", 1.0, flaky, clock2)
    q.committed([("a", 0, 10)])
    clock2.t = 1.0
    q.maybe_purge()
    q.maybe_purge()
    assert q.enabled and q.failures == 1
    flaky.error = None
    clock2.t = 2.5
    assert q.maybe_purge() == 1 and flaky.calls[-1] == {("a", 0): 10}  # asked again


def test_interval_zero_or_no_admin_never_purges() -> None:
    for p in (Purger("x", 0.0, Admin()), Purger("x", 5.0, None)):
        p.committed([("t", 0, 10)])
        assert not p.enabled and p.maybe_purge() == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1000), st.floats(0, 100)), max_size=60))
def test_never_asks_past_the_highest_commit(commits: list[tuple[int, int, float]]) -> None:
    clock, admin = Clock(), Admin()
    p = Purger("bolt", 10.0, admin, clock)
    highest: dict[tuple[str, int], int] = {}
    for part, off, dt in commits:
        p.committed([("t", part, off)])
        highest[("t", part)] = max(highest.get(("t", part), -1), off)
        clock.t += dt
        p.maybe_purge()
        for call in admin.calls:
            for key, asked in call.items():
                assert asked <= highest[key]
    for i in range(1, len(admin.calls)):  # per partition, what is asked only grows
        for key, asked in admin.calls[i].items():
            assert all(asked > c[key] for c in admin.calls[:i] if key in c)


def test_close_purges_the_last_commit_at_once() -> None:
    clock, admin = Clock(), Admin()
    p = Purger("count", 30.0, admin, clock)
    p.committed([("t", 0, 40)])
    p.close(timeout_s=1.0)  # long before the interval: the executor is stopping
    assert admin.calls == [{("t", 0): 40}] and p.purged_records == 40
