"""Sampled tracing: the sampling rule, the event record, and the diagnosis of a tree that did not complete."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from streams.monitoring.trace import TraceEvent, Tracer, decode_batch, diagnose, held_by, holders, outcome, sampled, threshold, timeline

SCHEMA = json.loads((Path(__file__).resolve().parents[3] / "schemas" / "trace.schema.json").read_text())
U64 = st.integers(0, 2**64 - 1)


@given(U64, st.floats(0, 1))
def test_sampling_depends_on_the_root_alone_and_grows_with_the_rate(root: int, rate: float) -> None:
    a, b = Tracer("x", "w0", rate, lambda k, v: None), Tracer("y", "w9", rate, lambda k, v: None)
    assert a.sampled(root) == b.sampled(root) == sampled(root, threshold(rate))  # every executor agrees
    if a.sampled(root):
        assert sampled(root, threshold(min(1.0, rate + 0.1)))
    assert not sampled(root, threshold(0.0)) and sampled(root, threshold(1.0))


def test_about_the_rate_of_random_roots_is_sampled() -> None:
    import random

    rng = random.Random(7)
    hits = sum(sampled(rng.getrandbits(64), threshold(0.01)) for _ in range(100_000))
    assert 800 < hits < 1200


def test_events_are_buffered_and_published_as_one_record_per_flush_and_validate() -> None:
    published: list[tuple[bytes, bytes]] = []
    tracer = Tracer("split", "w1", 1.0, lambda k, v: published.append((k, v)), wall=lambda: 5.0, flush_s=0.5)
    tracer.event("emit", 2**64 - 1, 3, edge=17, target="count", stream="default")
    tracer.event("ack", 2**64 - 1, 3, edge=16, where="squall.t.split[0]@4")
    tracer.maybe_flush(now=10.0)
    tracer.event("receive", 5, 3, edge=9)
    tracer.maybe_flush(now=10.2)  # within flush_s: kept
    assert len(published) == 1 and tracer.events == 2 and len(tracer.pending) == 1
    ((key, value),) = published
    assert key == b"split"
    jsonschema.validate(json.loads(value), SCHEMA)
    emit, ack = decode_batch(value, topic="t", partition=0, offset=0)
    assert (emit.root, emit.component, emit.task, emit.worker, emit.at, emit.edge, emit.target) == (2**64 - 1, "split", 3, "w1", 5.0, 17, "count")
    assert (ack.event, ack.where) == ("ack", "squall.t.split[0]@4")
    tracer.flush()
    assert len(published) == 2 and tracer.events == 3
    for _ in range(Tracer.MAX_BUFFERED):
        tracer.event("receive", 5, 3, edge=9)
    assert len(published) == 3  # a full buffer is published at once


def ev(event: str, component: str, at: float, edge: int = 0, target: str = "", task: int = 0) -> TraceEvent:
    return TraceEvent(1, event, component, task, "w0", at, edge, target)


COMPLETE = [
    ev("emit", "lines", 0.0, 11, "split"),
    ev("init", "__acker", 0.1, 11),
    ev("receive", "split", 0.2, 11),
    ev("emit", "split", 0.3, 22, "count"),
    ev("ack", "split", 0.3, 11),
    ev("receive", "count", 0.4, 22, task=2),
    ev("ack", "count", 0.5, 22, task=2),
    ev("complete", "__acker", 0.6),
]


def test_a_complete_tree_needs_no_diagnosis_and_reads_in_time_order() -> None:
    assert outcome(COMPLETE) == "complete" and diagnose(COMPLETE) == []
    lines = timeline(list(reversed(COMPLETE)))
    assert lines[0].startswith("+   0.000s [lines] task 0 (w0) emit edge 000000000000000b -> [split]")
    assert lines[-1].startswith("+   0.600s [__acker] task 0 (w0) complete")


def test_a_timed_out_tree_names_who_held_it_never_acked_acked_late_or_never_received() -> None:
    held = [e for e in COMPLETE if e.event != "complete" and not (e.event == "ack" and e.component == "count")] + [ev("timeout", "__acker", 30.6)]
    assert outcome(held) == "timed out"
    (line,) = diagnose(held)
    assert "received by [count] task 2 (w0) at +0.400s and never acked: [count] held it" in line
    late = [*held, ev("ack", "count", 31.0, 22, task=2)]
    (line,) = diagnose(late)
    assert "acked only at +31.000s, after the tree ended at +30.600s: [count] held it 30.600s" in line
    lost = [e for e in held if not (e.event == "receive" and e.component == "count")]
    (line,) = diagnose(lost)
    assert "to [count] was never received: it never reached [count]" in line
    waited = [e for e in lost if e.component != "count"] + [ev("receive", "count", 31.0, 22, task=2), ev("emit", "count", 31.1, 33, "sink")]
    (line,) = diagnose(waited)  # received after the end: it waited; and what count emitted after the end is not blamed
    assert "reached [count] task 2 (w0) only at +31.000s, after the tree ended at +30.600s: it waited in [count]'s input" in line


def test_holders_name_the_components_a_timed_out_tree_waited_on_in_order() -> None:
    held = [e for e in COMPLETE if e.event != "complete" and not (e.event == "ack" and e.component == "count")] + [ev("timeout", "__acker", 30.6)]
    assert holders(COMPLETE) == [] and holders([]) == []
    assert holders(held) == ["count"]  # received and never acked
    lost = [e for e in held if not (e.event == "receive" and e.component == "count")]
    assert holders(lost) == ["split -> count"]  # never received: in split's output or count's input
    waited = [*lost, ev("receive", "count", 31.0, 22, task=2)]
    assert holders(waited) == ["split -> count"]  # received only after the end: the same
    both = [e for e in held if not (e.event == "ack" and e.component == "split")]  # split never acked the line either
    assert holders(both) == ["split", "count"]
    assert [held_by(h, "split") for h in holders(waited)] == [True] and not held_by("count", "split")


def test_a_tree_queued_behind_a_sleeping_bolt_is_held_by_it_not_by_the_bolt_that_had_it_when_it_timed_out() -> None:
    # CI 2026-11-29: a tree waited 8 s for [slow], went on to [count] and timed out 0.3 s later
    queued = [
        ev("emit", "lines", 0.0, 11, "parse"),
        ev("receive", "parse", 0.1, 11),
        ev("emit", "parse", 0.1, 22, "slow"),
        ev("ack", "parse", 0.1, 11),
        ev("receive", "slow", 8.0, 22),
        ev("emit", "slow", 8.0, 33, "count"),
        ev("ack", "slow", 8.0, 22),
        ev("receive", "count", 8.2, 33),
        ev("timeout", "__acker", 8.5),
    ]
    assert holders(queued) == ["parse -> slow"]
    assert diagnose(queued) and "[count] held it" in diagnose(queued)[0]  # diagnose still says where it was at the end
    sleeping = [*queued[:5], ev("emit", "slow", 7.9, 33, "count"), ev("ack", "slow", 7.9, 22), queued[-2], queued[-1]]
    sleeping[4] = ev("receive", "slow", 0.2, 22)  # received at once; execute slept
    assert holders(sleeping) == ["slow"]
    two = [e for e in queued if e.event != "timeout"] + [ev("timeout", "__acker", 16.0)]  # [count] then held it as long
    assert holders(two) == ["parse -> slow", "count"]
    assert holders([*queued[:-1]]) == ["parse -> slow"]  # pending: up to its last event
