"""A supervisor's worker events are never lost or reordered when the broker does not confirm a write (service.control.events)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from service.control.client import still_running
from service.control.events import EventRecorder
from service.exceptions import BrokerError


class Writer:
    def __init__(self, ups: list[bool]) -> None:
        self.ups = ups
        self.calls = 0
        self.sent: list[tuple[str, int]] = []

    def event(self, topology: str, event: dict[str, Any]) -> None:
        up = self.ups[self.calls % len(self.ups)]
        self.calls += 1
        if not up:
            raise BrokerError(f"[control] write to squall.__events not confirmed ({topology})")
        self.sent.append((topology, event["n"]))


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=30), st.lists(st.booleans(), min_size=1, max_size=7))
def test_kept_events_reach_the_topic_once_each_in_the_order_recorded(records: list[tuple[bool, bool]], ups: list[bool]) -> None:
    """``records``: (keep, retry a round after it); ``ups``: which writes the broker confirms, cycled."""
    writer = Writer(ups)
    rec = EventRecorder("h1", lambda: writer, retry_every_s=0.0)
    dropped = []
    for n, (keep, retry) in enumerate(records):
        if not rec.record("wc", {"event": "stopped", "n": n}, keep=keep) and not keep:
            dropped.append(n)
        if retry:
            rec.retry()
    writer.ups = [True]
    rec.retry()
    assert not rec.pending
    sent = [n for _, n in writer.sent]
    assert sent == sorted(sent) and len(set(sent)) == len(sent)  # in order, once each
    assert set(sent) == set(range(len(records))) - set(dropped)  # every kept one; an unkept one only if it was confirmed at once


def test_before_the_writer_exists_events_are_kept_for_it() -> None:
    holder: list[Writer] = []
    rec = EventRecorder("h1", lambda: holder[0] if holder else None, retry_every_s=0.0)
    assert rec.record("wc", {"event": "stopped", "n": 0}) is False
    holder.append(Writer([True]))
    assert rec.record("wc", {"event": "stopped", "n": 1}) is True
    assert holder[0].sent == [("wc", 0), ("wc", 1)]


def test_after_a_failed_write_the_kept_events_wait_before_the_next_try() -> None:
    """A broker that is down costs the supervisor one write's timeout per ``retry_every_s``, not one per round."""
    now = [100.0]
    writer = Writer([False])
    rec = EventRecorder("h1", lambda: writer, retry_every_s=2.0, clock=lambda: now[0])
    assert rec.record("wc", {"event": "stopped", "n": 0}) is False and writer.calls == 1
    assert rec.record("wc", {"event": "crashed", "n": 1}) is False and writer.calls == 1  # kept behind the first, not tried
    now[0] = 101.0
    assert rec.retry() == 0 and writer.calls == 1
    writer.ups = [True]
    assert rec.retry(force=True) == 2 and writer.sent == [("wc", 0), ("wc", 1)]
    assert rec.record("wc", {"event": "stopped", "n": 2}) is True
    writer.ups = [False, False, True]
    rec.record("wc", {"event": "stopped", "n": 3})
    rec.last_tries(3, 0.0)  # shutdown: the third try is confirmed
    assert not rec.pending and writer.sent[-1] == ("wc", 3)


def test_a_kill_waits_only_for_workers_whose_last_event_is_a_start() -> None:
    """The ``squall kill`` wait: a crashed, fenced, refused or already stopped worker has nothing to stop."""
    seen = [
        {"worker": 0, "event": "started", "at": 1.0, "pid": 10, "supervisor": "h1"},
        {"worker": 1, "event": "started", "at": 1.0, "pid": 11, "supervisor": "h2"},
        {"worker": 1, "event": "crashed", "at": 3.0, "pid": 11, "supervisor": "h2"},
        {"worker": 2, "event": "refused", "at": 1.0, "supervisor": "h3"},
        {"worker": 3, "event": "started", "at": 1.0, "pid": 13, "supervisor": "h1"},
        {"worker": 3, "event": "stopped", "at": 2.0, "pid": 13, "supervisor": "h1"},  # moved before the kill, not started again
        {"worker": 4, "event": "started", "at": 1.0, "pid": 14, "supervisor": "h3"},
        {"worker": 4, "event": "fenced", "at": 4.0, "pid": 14, "supervisor": "h3"},
        {"worker": 4, "event": "started", "at": 4.5, "pid": 15, "supervisor": "h2"},
    ]
    left = still_running(set(range(6)), seen, since=5.0)
    assert {w: e["pid"] for w, e in left.items()} == {0: 10, 4: 15}
    after = [*seen, {"worker": 0, "event": "stopped", "at": 6.0, "pid": 10}, {"worker": 4, "event": "stopped", "at": 6.5, "pid": 15}]
    assert still_running(set(range(6)), after, since=5.0) == {}
