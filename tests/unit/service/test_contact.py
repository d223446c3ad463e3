"""A supervisor's contact lease with the broker (service.supervisor.contact): /readyz fails within the workers' lease of the last answer."""

from __future__ import annotations

import threading
import time

from hypothesis import given
from hypothesis import strategies as st

from service.supervisor.contact import BrokerContact


@given(st.lists(st.floats(0.0, 10.0), max_size=20), st.floats(0.0, 30.0))
def test_the_lease_holds_exactly_while_the_last_answer_is_within_it(answers: list[float], at: float) -> None:
    c = BrokerContact(lambda: None, now=0.0, lease_s=3.0)
    for a in answers:
        c.answered(a)
    last = max([0.0, *answers])
    assert c.silent_for(at) == max(0.0, at - last)
    assert c.holds(at) == (at - last <= 3.0)


def test_the_next_answer_gives_the_lease_back_and_a_silence_longer_than_the_session_is_marked() -> None:
    c = BrokerContact(lambda: None, now=0.0, lease_s=3.0, long_gap_s=6.0)
    assert c.holds(1.0) and not c.holds(3.5)
    c.answered(5.0)  # 5 s of silence: its session held
    assert c.holds(5.1) and c.long_gap_ended is None
    c.answered(12.0)  # 7 s: the group gave its slots away meanwhile
    assert c.holds(12.1) and c.long_gap_ended == 12.0


def test_the_probe_thread_loses_the_lease_when_the_broker_stops_answering_and_regains_it() -> None:
    cut = threading.Event()

    def probe() -> None:
        if cut.is_set():
            raise TimeoutError("no answer")

    c = BrokerContact(probe, now=time.monotonic(), lease_s=0.6)
    c.start()
    try:
        time.sleep(1.0)
        assert c.holds(time.monotonic())  # answering every probe
        cut.set()
        deadline = time.monotonic() + 5
        while c.holds(time.monotonic()):
            assert time.monotonic() < deadline, "the lease never lapsed"
            time.sleep(0.05)
        lapsed_after = c.silent_for(time.monotonic())
        assert 0.6 <= lapsed_after < 1.5
        cut.clear()
        deadline = time.monotonic() + 5
        while not c.holds(time.monotonic()):
            assert time.monotonic() < deadline, "the lease never came back"
            time.sleep(0.05)
    finally:
        c.stop()
