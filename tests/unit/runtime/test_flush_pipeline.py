"""Flushes that do not stall the bolt executor: a flush's acker ops leave only after every record produced before it was reported."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from examples.wordcount import topology
from streams.config import resolve
from streams.model.tuple import Tuple
from streams.runtime.bolt import BoltExecutor
from streams.runtime.executor import ExecutorEnv
from streams.runtime.flush_pipeline import FlushGeneration, FlushPipeline
from streams.wire.acker import OP_FAIL, decode_ops
from streams.wire.codec import decode_tuples

STEP = st.one_of(st.just(("produce",)), st.just(("seal",)), st.tuples(st.just("report"), st.integers(0, 10_000), st.booleans()))


@settings(max_examples=300, deadline=None)
@given(st.lists(STEP, max_size=120))
def test_a_flush_is_released_after_every_record_before_it_was_reported_and_in_seal_order(steps: list[tuple[object, ...]]) -> None:
    """Any interleaving of produced records, flushes and delivery reports (in any order, some failed)."""
    failed: list[int] = []
    pipe: FlushPipeline[int] = FlushPipeline(lambda err, msg: failed.append(msg))
    unreported: list[tuple[int, FlushGeneration[int]]] = []  # (record number, its generation's callback)
    produced = 0
    seals: list[int] = []  # records produced before each seal
    released: list[int] = []
    failures_of: dict[FlushGeneration[int], int] = {}  # the generations stay referenced
    for step in steps:
        if step[0] == "produce":
            gen = pipe.current
            gen.produced()
            unreported.append((produced, gen))
            produced += 1
        elif step[0] == "seal":
            pipe.seal(len(seals))
            seals.append(produced)
        elif unreported:
            _, pick, fail = step
            assert isinstance(pick, int)
            n, gen = unreported.pop(pick % len(unreported))
            gen("error" if fail else None, n)
            if fail:
                failures_of[gen] = failures_of.get(gen, 0) + 1
        for gen in pipe.delivered():
            assert gen.payload is not None
            released.append(gen.payload)
            before = seals[gen.payload]
            assert all(n >= before for n, _ in unreported), "released while a record produced before its seal is unreported"
            assert gen.failures == failures_of.get(gen, 0)
    assert released == list(range(len(released)))  # in seal order, each once
    assert len(failed) == sum(failures_of.values())  # every failed report reached on_failure
    for n, gen in list(unreported):  # report the rest: everything sealed is released
        gen(None, n)
    rest = [g.payload for g in pipe.delivered()]
    assert released + rest == list(range(len(seals)))


def test_a_pipeline_waits_for_at_most_max_pending_flushes() -> None:
    pipe: FlushPipeline[int] = FlushPipeline(max_pending=2)
    pipe.current.produced()
    pipe.seal(0)
    assert not pipe.full and pipe.waiting and not pipe.oldest_delivered()
    pipe.seal(1)  # empty: delivered, but behind flush 0
    assert pipe.full and not pipe.oldest_delivered()
    pipe.pending[0](None, None)
    assert pipe.oldest_delivered()
    assert [g.payload for g in pipe.delivered()] == [0, 1] and not pipe.waiting
    with pytest.raises(ValueError, match="max_pending"):
        FlushPipeline(max_pending=0)


def test_the_bolt_executor_goes_on_while_a_flush_waits_and_fails_its_trees_when_the_outputs_are_lost() -> None:
    """No broker (every delivery fails after 0.3 s): the flush returns at once holding the ack; once
    the output's failure is reported, the tree is failed instead of acked and the offset becomes committable."""
    conf = resolve({"squall.topic.purge.interval.secs": 0})
    env = ExecutorEnv(
        topology=topology(), component="split", conf=conf, bootstrap="127.0.0.1:1", kafka={"producer": {"message.timeout.ms": 300, "log_level": 0}}
    )
    ex = BoltExecutor(env)
    sent: list[tuple[str, bytes | None, int]] = []
    tracked = ex.produce

    def produce(topic: str, value: bytes | None, key: bytes | None = None, partition: int = -1, headers: object = None) -> None:
        sent.append((topic, value, partition))
        tracked(topic, value, key, partition, headers)

    ex.produce = ex.transfer.send = produce
    try:
        task = ex.by_partition[0] = ex._new_task(0)
        root, edge = random.getrandbits(64), random.getrandbits(64)
        t = Tuple(["to be or not"], "default", "lines", 0, {root: edge}, ex.topology.field_index("lines", "default"), ex.topic, 0, 41)
        ex._execute(task, t)  # Split emits four words anchored to t, then acks it
        task.next_offset = 42
        assert len(ex.transfer) == 4 and not sent and ex.acks is not None and len(ex.acks) == 1  # the words wait in packs
        started = time.monotonic()
        ex._flush()
        assert time.monotonic() - started < 0.25  # it did not wait for the broker
        records = len(sent)  # the packs left first: one record per count partition the words went to
        words = [e[4][0] for _, v, p in sent for e in decode_tuples(v, component="count", topic="t", partition=p, offset=0)]
        assert sorted(words) == ["be", "not", "or", "to"] and records <= 4
        assert len(ex.acks) == 0 and task.flushed_offset == -1  # the ack waits with the flush
        ex._await_delivery(ex.pipeline.oldest_delivered)  # the one flush waiting
        ex._release_delivered()
        acker = [(value, p) for topic, value, p in sent if topic == ex.acks.topic]
        assert len(acker) == 1 and acker[0][0] is not None
        ops = decode_ops(acker[0][0], component="acker", topic=ex.acks.topic, partition=acker[0][1], offset=0)
        assert [op[:2] for op in ops] == [[OP_FAIL, root]] and "outputs lost" in str(ops[0][2])
        assert task.flushed_offset == 42 and ex.delivery.failures == records
    finally:
        ex.producer.purge()
        ex.producer.flush(0)
