"""A replaced worker's late writes are fenced on every wire (issue 29, item 2), on a real broker.

Mid-run, records are written as a worker replaced while it was cut off would write them when
its connection comes back: the same sending tasks as the live ones, in an older epoch, after
the live epoch wrote to the same partitions. Each bolt and the acker drop them, count them,
and the word count has none of their words; the live records all go through.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from service.config import ServiceSettings
from service.run.runner import Job
from streams.kafka.clients import new_producer
from streams.wire.acker import OP_INIT, encode_ops, from_header, read_from
from streams.wire.codec import decode_tuples, encode_rooted
from streams.wire.naming import acker_topic, component_topic
from tests.integration.conftest import EXAMPLES, assert_at_least, corpus_slice, direct_count

pytestmark = pytest.mark.broker  # Apache Kafka (the wire and the checks are the same on the embedded broker)


def live_senders(bootstrap: str, topic: str, n: int = 200) -> dict[int, int]:
    """The senders in the first ``n`` records of ``topic[0]`` with the epoch each wrote in: tuples' ``(source task -> epoch)``, or an acker record's header."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"fencing-probe-{time.time_ns()}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: dict[int, int] = {}
    try:
        for msg in c.consume(n, 10.0):
            if msg.error() or msg.value() is None:
                continue
            origin = read_from(msg.headers())
            if origin is not None:
                out[origin[0]] = origin[1]
            elif not topic.endswith("__acker"):
                for _, _, task, epoch, *_ in decode_tuples(msg.value(), component="probe", topic=topic, partition=0, offset=msg.offset() or 0):
                    out[task] = epoch
    finally:
        c.close()
    return out


def test_late_writes_of_an_older_epoch_are_dropped_counted_and_never_counted_as_words(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 12_000)
    job = Job(EXAMPLES / "wordcount.py", src, tmp_path / "counts.json", settings, conf_overrides={"topology.max.spout.pending": 200})
    name = job.name  # (a bound of 200 message ids per spout task keeps the run going well past the injection)
    split_in, count_in, acks_in = component_topic(name, "split"), component_topic(name, "count"), acker_topic(name)
    try:
        job.start()
        assert job.board is not None
        while job.board.total("spout", "acked") < 2000:
            job.board.poll(0.2)
        senders = {t: live_senders(job.bootstrap, t) for t in (split_in, count_in, acks_in)}
        assert all(senders.values()), senders
        producer = new_producer({"bootstrap.servers": job.bootstrap})
        for task, epoch in senders[split_in].items():  # a spout task's old life: a line of words no one typed
            producer.produce(split_in, encode_rooted("default", "lines", task, epoch - 1, ["zombie zombie zombie"], 2**63 + task, 5), partition=0)
        for task, epoch in senders[count_in].items():  # a split task's old life: a word
            producer.produce(count_in, encode_rooted("default", "split", task, epoch - 1, ["zombie"], 2**63 + task, 7), partition=0)
        for sender, epoch in senders[acks_in].items():  # an old life's flush: two inits of trees that never were
            producer.produce(
                acks_in, encode_ops([[OP_INIT, 2**62 + sender, 9, 0], [OP_INIT, 2**62 + sender + 1, 9, 0]]), partition=0, headers=from_header(sender, epoch - 1)
            )
        assert producer.flush(10) == 0
        summary = job.wait(300)
        fenced = [job.board.total("bolt", "fenced_tuples"), job.board.total("acker", "fenced_acker_ops"), job.board.total("acker", "fenced_acker_records")]
    finally:
        job.close()
    counts = json.loads((tmp_path / "counts.json").read_text())
    assert "zombie" not in counts
    assert_at_least(counts, direct_count(src))
    injected_tuples = len(senders[split_in]) + len(senders[count_in])
    print(f"injected {injected_tuples} tuples and {len(senders[acks_in])} acker records from older epochs; fenced (tuples, acker ops, acker records): {fenced}")
    print("\n".join(summary.lines()))
    assert fenced == [injected_tuples, 2 * len(senders[acks_in]), len(senders[acks_in])]
    assert summary.records == 12_000
