"""A worker's lease (streams.runtime.lease): held only while confirmed, given back only once verified, never after a fence."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from examples.wordcount import topology
from streams.config import resolve
from streams.exceptions import ConfigError
from streams.runtime.executor import Executor, ExecutorEnv
from streams.runtime.lease import CLAIM_LIVE_S, LEASE_S, MAX_CLOCK_SKEW_S, WorkerLease, check_timeouts

STEP = st.one_of(
    st.tuples(st.just("wait"), st.floats(0.0, 2.0)),
    st.tuples(st.just("renew"), st.floats(-1.0, 0.0)),  # a snapshot taken up to 1 s ago is confirmed now
    st.tuples(st.just("check"), st.just(0.0)),
    st.tuples(st.just("verify"), st.just(0.0)),
    st.tuples(st.just("fence"), st.just(0.0)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(STEP, max_size=60))
def test_the_lease_is_held_only_while_confirmed_and_verified(steps: list[tuple[str, float]]) -> None:
    now = 1000.0
    lease = WorkerLease(now)
    fenced = False
    lapsed_since: float | None = None
    renewed_after_lapse = False
    for kind, x in steps:
        if kind == "wait":
            now += x
        elif kind == "renew":
            lease.renew(now + x)
            if lapsed_since is not None and now + x > lapsed_since:
                renewed_after_lapse = True
        elif kind == "check":
            was = lease.state
            if lease.check(now) == "lapsed":
                assert was == "held" and now - lease.renewed_at > LEASE_S
                lapsed_since, renewed_after_lapse = now, False
            if lease.held:  # right after a check, held means confirmed within the lease
                assert now - lease.renewed_at <= LEASE_S
        elif kind == "verify":
            was_lapsed = lease.state == "lapsed"
            if lease.verified(now) == "regained":
                assert was_lapsed and renewed_after_lapse and not fenced
                lapsed_since = None
        else:
            lease.fence("test")
            fenced = True
        if fenced:
            assert not lease.held and lease.state == "fenced"
        if lapsed_since is not None and not renewed_after_lapse:
            assert not lease.held


def test_the_timeouts_keep_their_order() -> None:
    assert LEASE_S + MAX_CLOCK_SKEW_S < CLAIM_LIVE_S
    check_timeouts(1.0, "lines")
    with pytest.raises(ConfigError, match=r"\[lines\] squall.stats.interval.secs is 2 s"):
        check_timeouts(2.0, "lines")


def test_an_executor_holds_its_loop_while_the_lease_is_not_held_and_goes_on_once_it_is() -> None:
    lease = WorkerLease(time.time() - LEASE_S - 1)  # nothing confirmed since: lapses at the next check
    conf = resolve({"squall.topic.purge.interval.secs": 0})
    env = ExecutorEnv(
        topology=topology(),
        component="split",
        conf=conf,
        bootstrap="127.0.0.1:1",
        kafka={"producer": {"message.timeout.ms": 300, "log_level": 0}},
        lease=lease,
    )
    ex = Executor(env)
    rounds: list[float] = []

    def loop() -> None:
        for _ in range(3):
            ex._maybe_stats(time.monotonic())
            rounds.append(time.monotonic())

    try:
        ex._maybe_stats(time.monotonic())  # held: a round goes through
        assert lease.check(time.time()) == "lapsed"
        t = threading.Thread(target=loop, daemon=True)
        t.start()
        time.sleep(1.0)
        assert rounds == []  # held at the top of its first round
        beat = ex.beat
        time.sleep(0.3)
        assert ex.beat > beat  # still beating: the hang check does not kill a paused worker
        assert ex.stats.counters["lease_pauses"] == 1
        time.sleep(0.01)
        lease.renew(time.time())
        assert lease.verified(time.time()) == "regained"
        t.join(5)
        assert len(rounds) == 3 and not t.is_alive()
        assert ex.stats.counters["lease_paused_seconds"] >= 1.0
    finally:
        ex.producer.flush(0)


def test_a_confirmed_snapshot_renews_the_lease_with_its_own_time() -> None:
    lease = WorkerLease(0.0)
    conf = resolve({"squall.topic.purge.interval.secs": 0})
    env = ExecutorEnv(topology=topology(), component="split", conf=conf, bootstrap="127.0.0.1:1", kafka={"producer": {"log_level": 0}}, lease=lease)
    ex = Executor(env)
    calls: list[object] = []
    real = ex.producer

    class Confirming:
        def produce(self, topic: str, value: bytes, key: bytes, on_delivery: Callable[[Any, Any], None]) -> None:
            calls.append(topic)
            on_delivery(None, None)

        def poll(self, t: float) -> int:
            return 0

    try:
        ex.producer = Confirming()
        before = time.time()
        ex._publish_snapshot()
        assert calls == ["squall.wordcount.__metrics"]
        assert before <= lease.renewed_at <= time.time()
    finally:
        real.flush(0)


class StuckProducer:
    """A producer whose broker never confirms: each flush call is one step of a simulated clock."""

    def __init__(self, clock: list[float], step: float) -> None:
        self.clock, self.step, self.queued, self.purged_at = clock, step, 7, -1.0

    def flush(self, timeout: float = 0.0) -> int:
        if timeout:
            self.clock[0] += self.step
        return self.queued

    def poll(self, timeout: float = 0.0) -> int:
        return self.flush(timeout)

    def __len__(self) -> int:
        return self.queued

    def purge(self, in_queue: bool = True, in_flight: bool = True) -> None:
        self.purged_at, self.queued = self.clock[0], 0


def test_a_blocked_flush_purges_only_once_the_lease_has_been_lapsed_for_purge_after_s() -> None:
    """Short lapses (a busy broker, a leader election) keep their outputs; a long one purges them before they could go out after a heal."""
    from streams.kafka.clients import flush_patiently
    from streams.runtime.lease import LEASE_S, PURGE_AFTER_S

    clock = [100.0]
    lease = WorkerLease(now=clock[0])
    producer = StuckProducer(clock, 0.5)
    assert lease.check(100.0 + LEASE_S + 0.1) == "lapsed"
    lapsed_at = 100.0 + LEASE_S + 0.1
    clock[0] = lapsed_at
    flush_patiently(producer, "split", "outputs", give_up=lambda: lease.purge_due(clock[0]))
    assert producer.queued == 0 and PURGE_AFTER_S <= producer.purged_at - lapsed_at < PURGE_AFTER_S + 0.6
    fenced = WorkerLease(now=clock[0])
    fenced.fence("split:0 claimed by w1 (pid 7) on h2")
    producer = StuckProducer(clock, 0.5)
    start = clock[0]
    flush_patiently(producer, "split", "outputs", give_up=lambda: fenced.purge_due(clock[0]))
    assert producer.purged_at - start <= 0.5  # fenced: at once


def test_a_bolt_waiting_for_one_flush_purges_once_the_lease_has_been_lapsed_for_purge_after_s() -> None:
    """The wait for a flush generation (streams.runtime.flush_pipeline) gives up as a blocked flush does."""
    from streams.kafka.clients import wait_patiently
    from streams.runtime.lease import LEASE_S, PURGE_AFTER_S

    clock = [100.0]
    lease = WorkerLease(now=clock[0])
    producer = StuckProducer(clock, 0.05)
    lapsed_at = clock[0] = 100.0 + LEASE_S + 0.1
    assert lease.check(lapsed_at) == "lapsed"
    wait_patiently(producer, "split", "outputs", lambda: producer.queued == 0, give_up=lambda: lease.purge_due(clock[0]), clock=lambda: clock[0])
    assert producer.queued == 0 and PURGE_AFTER_S <= producer.purged_at - lapsed_at < PURGE_AFTER_S + 0.6
    producer = StuckProducer(clock, 0.05)
    start = clock[0]
    wait_patiently(producer, "split", "outputs", lambda: clock[0] - start >= 2.0, clock=lambda: clock[0])  # no lease: until done
    assert producer.purged_at == -1.0 and producer.queued == 7 and clock[0] - start >= 2.0
