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
    assert c.held(at) == (at - last <= 3.0)


def test_a_lapse_is_counted_once_and_the_next_answer_gives_the_lease_back() -> None:
    c = BrokerContact(lambda: None, now=0.0, lease_s=3.0)
    assert c.held(1.0) and not c.held(3.5) and not c.held(9.0)
    assert c.lapses == 1
    c.answered(9.5)
    assert c.held(9.6) and not c.held(20.0) and c.lapses == 2


def test_the_probe_thread_loses_the_lease_when_the_broker_stops_answering_and_regains_it() -> None:
    cut = threading.Event()

    def probe() -> None:
        if cut.is_set():
            raise TimeoutError("no answer")

    c = BrokerContact(probe, now=time.monotonic(), lease_s=0.6)
    c.start()
    try:
        time.sleep(1.0)
        assert c.held(time.monotonic())  # answering every probe
        cut.set()
        deadline = time.monotonic() + 5
        while c.held(time.monotonic()):
            assert time.monotonic() < deadline, "the lease never lapsed"
            time.sleep(0.05)
        lapsed_after = c.silent_for(time.monotonic())
        assert 0.6 <= lapsed_after < 1.5
        cut.clear()
        deadline = time.monotonic() + 5
        while not c.held(time.monotonic()):
            assert time.monotonic() < deadline, "the lease never came back"
            time.sleep(0.05)
    finally:
        c.stop()
