"""Sampled tracing where tuples pass.

A bolt executor decides once per tuple (``Tuple.traced``), and its execute, emits, ack and fail
follow that decision; the acker traces only sampled roots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from acker.durable import DurableLedger
from acker.ledger import Ledger
from acker.runtime_native import AckerExecutor
from streams.config import resolve
from streams.model.loader import load_topology
from streams.model.tuple import Tuple
from streams.monitoring.trace import Tracer
from streams.runtime.bolt import BoltExecutor
from streams.runtime.executor import ExecutorEnv
from streams.testing.memlog import Record
from streams.wire.acker import OP_ACK, OP_INIT
from streams.wire.codec import decode_tuples, encode_rooted, encode_tuple

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SAMPLED = 0x00000000_0000BEEF  # top 32 bits 0: below any rate's threshold
UNSAMPLED = 0xFFFFFFFF_0000BEEF  # top 32 bits at the maximum: above 1%'s


def split_executor(debug: bool = True) -> tuple[BoltExecutor, list[tuple[str, bytes]]]:
    topology = load_topology(EXAMPLES / "wordcount.py", "trace-hooks")
    conf = resolve(topology.conf, {"topology.debug": debug, "squall.trace.sample.rate": 0.01})
    ex = BoltExecutor(ExecutorEnv(topology=topology, component="split", conf=conf, bootstrap="127.0.0.1:1", workdir=Path("/tmp")))
    sent: list[tuple[str, bytes]] = []
    ex.produce = ex.transfer.send = lambda topic, value, key=None, partition=-1, **kw: sent.append((topic, value))
    ex.by_partition[0] = ex._new_task(0)
    return ex, sent


def tuples_sent(ex: BoltExecutor, sent: list[tuple[str, bytes]]) -> int:
    """The tuples in what ``ex`` sent, its packs flushed as at the end of its round."""
    ex.transfer.flush()
    return sum(len(decode_tuples(v, component="count", topic=t, partition=0, offset=0)) for t, v in sent if t in ex.transfer.topics)


def line(text: str, root: int, edge: int = 77) -> bytes:
    return encode_rooted("default", "lines", 0, 1, [text], root, edge)


def events(ex: BoltExecutor) -> list[tuple[int, str, int]]:
    assert ex.tracer is not None
    return [(e[0], e[1], e[4]) for e in ex.tracer.pending]


def test_a_sampled_tuple_is_traced_through_receive_emits_ack_and_execute_and_an_unsampled_one_not_at_all() -> None:
    ex, sent = split_executor()
    ex._process(Record(ex.topic, 0, 0, line("to be or", UNSAMPLED)))
    ex._process(Record(ex.topic, 0, 1, line("not to be", SAMPLED)))
    got = events(ex)
    assert {root for root, _, _ in got} == {SAMPLED}
    kinds = [kind for _, kind, _ in got]
    assert kinds == ["receive", "emit", "emit", "emit", "ack", "execute"]  # a BasicBolt acks inside execute
    assert got[0][2] == got[-1][2] == got[-2][2] == 77  # receive, ack, execute: the input's edge in the tree
    assert len({edge for _, kind, edge in got if kind == "emit"}) == 3  # each word a new edge
    assert tuples_sent(ex, sent) == 6  # both lines' words were sent


def test_a_failed_sampled_tuple_is_traced_as_a_fail() -> None:
    ex, _ = split_executor()
    ex._process(Record(ex.topic, 0, 0, encode_rooted("default", "lines", 0, 1, [None], SAMPLED, 5)))  # None.lower() raises
    kinds = [kind for _, kind, _ in events(ex)]
    assert kinds == ["receive", "fail", "execute"]
    assert ex.acks is not None and ex.acks.fails == {SAMPLED: "[split] AttributeError: 'NoneType' object has no attribute 'lower'"}


def test_without_topology_debug_there_is_no_tracer_and_tuples_still_flow() -> None:
    ex, sent = split_executor(debug=False)
    assert ex.tracer is None
    ex._process(Record(ex.topic, 0, 0, line("to be", SAMPLED)))
    assert tuples_sent(ex, sent) == 2


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.integers(0, 2**64 - 1), st.integers(1, 2**64 - 1), min_size=1, max_size=4))
def test_a_tuple_is_traced_when_any_of_its_trees_is_sampled_and_events_name_only_those(anchors: dict[int, int]) -> None:
    ex, _ = split_executor()
    assert ex.tracer is not None
    ex._process(Record(ex.topic, 0, 0, encode_tuple("default", "lines", 0, ["a"], anchors, epoch=1)))
    wanted = {root for root in anchors if ex.tracer.sampled(root)}
    got = events(ex)
    assert {root for root, _, _ in got} == wanted
    for root in wanted:
        assert [kind for r, kind, _ in got if r == root] == ["receive", "emit", "ack", "execute"]
        assert [edge for r, kind, edge in got if r == root and kind != "emit"] == [anchors[root]] * 3


def test_the_acker_traces_the_ops_and_outcomes_of_sampled_trees_only() -> None:
    acker = AckerExecutor.__new__(AckerExecutor)
    acker.tracer = Tracer("__acker", "w0", 0.01, lambda k, v: None, wall=lambda: 1.0)
    ledger = DurableLedger(Ledger(30.0, clock=lambda: 0.0))
    ops: list[list[Any]] = [[OP_INIT, SAMPLED, 9, 0], [OP_INIT, UNSAMPLED, 9, 0], [OP_ACK, SAMPLED, 9], [OP_ACK, UNSAMPLED, 9]]
    outs = ledger.apply(0, ops)
    assert {o.root for o in outs} == {SAMPLED, UNSAMPLED}  # both complete
    acker._trace(3, ops, outs)
    assert [(e[0], e[1], e[2], e[4]) for e in acker.tracer.pending] == [(SAMPLED, "init", 3, 9), (SAMPLED, "acker_ack", 3, 9), (SAMPLED, "complete", 3, 0)]


def test_debug_turns_on_and_off_live_at_the_next_round_and_a_tuple_read_traced_acks_safely_after_it_is_off() -> None:
    ex, _sent = split_executor(debug=False)
    assert ex.tracer is None
    ex._process(Record(ex.topic, 0, 0, line("to be or", SAMPLED)))  # off: nothing traced
    ex.request_trace(0.01)  # squall debug NAME on --sampling-pct 1, from the control watcher's thread
    assert ex.tracer is None  # not before the executor's next round
    ex._maybe_stats(1.0)
    tracer = ex.tracer
    assert tracer is not None and ex.by_partition[0].collector.tracer is tracer
    ex._process(Record(ex.topic, 0, 1, line("not to be", SAMPLED)))
    assert {"receive", "emit", "ack", "execute"} <= {e[1] for e in events(ex)}
    ex.request_trace(1.0)  # a new rate keeps the tracer and its buffered events
    ex._maybe_stats(2.0)
    assert ex.tracer is tracer and tracer.sampled(UNSAMPLED)
    held = [Tuple(["held"], "default", "lines", 0, {SAMPLED: 77}, {"line": 0})]
    held[0].traced = True  # read while tracing was on, acked after it went off (a window or aggregate holds tuples)
    ex.request_trace(0.0)
    ex._maybe_stats(3.0)
    assert ex.tracer is None and ex.by_partition[0].collector.tracer is None
    ex.by_partition[0].collector.ack(held[0])  # no tracer: no event, no error
    ex._process(Record(ex.topic, 0, 3, line("or not", SAMPLED)))
    assert ex.tracer is None
