"""The exactly-once Kafka sink (issue 30) on Apache Kafka: each batch's records in one Kafka
transaction with its txid; a replayed txid writes nothing; a zombie is fenced; a transaction a
crash left open is never seen; three kill -9s of the sink's worker leave a read_committed reader
seeing every batch's counts once. On the embedded broker it is refused with a clear error."""

from __future__ import annotations

import json
import random
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from service.brokers.admin import read_records
from service.config import ServiceSettings
from service.run.runner import Job
from streams.exceptions import FatalError, TopologyError
from streams.kafka.clients import new_admin
from streams.transactional.kafka_sink import TransactionalWriter
from tests.integration.conftest import EXAMPLES, TestBroker, corpus_slice, direct_count, kill_workers

pytestmark = pytest.mark.broker  # Apache Kafka: the embedded broker's read_committed is broken

SINK_EXAMPLE = EXAMPLES / "wordcount_exactly_once_sink.py"


def topics(bootstrap: str, *specs: tuple[str, int]) -> None:
    admin = new_admin({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, n, 1) for t, n in specs]).values():
        f.result()


def committed_values(bootstrap: str, topic: str) -> list[bytes]:
    return [v for _, v in read_records(bootstrap, topic) if v is not None]  # librdkafka reads read_committed by default


def writer(bootstrap: str, topic: str, txids: str, tid: str, partition: int = 0) -> TransactionalWriter:
    return TransactionalWriter(bootstrap, {}, topic, txids, partition, f"g.{tid}", tid, "out")


def test_a_replayed_txid_writes_nothing_a_zombie_is_fenced_and_an_open_transaction_is_never_seen(broker: TestBroker) -> None:
    b = broker.bootstrap
    u = uuid.uuid4().hex[:8]
    topic, txids, tid = f"sink.{u}", f"sink.{u}.txids", f"sink.{u}.0"
    topics(b, (topic, 1), (txids, 2))
    w = writer(b, topic, txids, tid)
    assert w.last_txid == 0 and w.commit(1, [(b"a", b"1", None), (b"b", b"2", None)])
    assert not w.commit(1, [(b"a", b"1", None)])  # the same txid again: nothing
    again = writer(b, topic, txids, tid)  # the task's next life: fences the first, knows txid 1
    assert again.last_txid == 1 and not again.commit(1, [(b"a", b"1", None)])
    with pytest.raises(FatalError, match=r"\[out\] transactional id .* fenced"):
        w.commit(2, [(b"zombie", b"z", None)])
    # A life that dies mid-transaction: its records are never seen, the next life aborts it.
    again.producer.begin_transaction()
    again._produce(b"lost", b"x", None)
    again.producer.flush(10)
    third = writer(b, topic, txids, tid)
    assert third.last_txid == 1 and third.commit(2, [(b"c", b"3", None)])
    assert committed_values(b, topic) == [b"1", b"2", b"3"]
    other = writer(b, topic, txids, f"sink.{u}.1", partition=1)  # another task: its own txids
    assert other.last_txid == 0


def test_three_kill9s_of_the_sinks_worker_leave_every_batch_counted_once(broker: TestBroker, settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 30_000)
    settings = settings.model_copy(update={"restart_initial_secs": 0.5})
    # small batches, two in flight: about 75 txids, so the three kills land mid-run
    overrides = {"topology.max.spout.pending": 2, "squall.batch.records": 200}
    job = Job(SINK_EXAMPLE, src, tmp_path / "counts.jsonl", settings, conf_overrides=overrides)
    kills: list[str] = []
    killer: list[threading.Thread] = []
    try:
        job.start()
        assert job.cluster is not None
        sink_worker = job.cluster.worker_of("out")
        killer.append(kill_workers(job, [sink_worker] * 3, random.Random(), kills, pause_s=(1.0, 2.0)))
        summary = job.wait(600)
        killer[0].join(5)
    finally:
        job.close()
    rows = [json.loads(r["value"]) for r in map(json.loads, (tmp_path / "counts.jsonl").read_text().splitlines())]
    per_batch = Counter((r["txid"], r["word"]) for r in rows)
    twice = [k for k, n in per_batch.items() if n > 1]
    total: Counter[str] = Counter()
    for r in rows:
        total[r["word"]] += r["count"]
    print("\n".join(kills), f"{len(rows)} records, {len(per_batch)} (txid, word) pairs, last txid {summary.last_txid}", sep="\n")
    assert len(kills) == 3 and summary.worker_restarts == 3
    assert not twice, f"{len(twice)} (txid, word) records seen twice, e.g. {twice[:5]}"
    assert total == direct_count(src)


def test_the_embedded_broker_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    job = Job(SINK_EXAMPLE, None, None, ServiceSettings(data_dir=tmp_path))  # no bootstrap: the embedded broker
    try:
        with pytest.raises(TopologyError, match=r"\[out\] KafkaSink writes exactly once with Kafka transactions, and the embedded broker"):
            job.start()
    finally:
        job.close()
