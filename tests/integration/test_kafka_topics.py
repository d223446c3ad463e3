"""Topics for a service that runs for months (on Apache Kafka; the embedded broker keeps everything):
every topic has an explicit policy, consumers purge what they committed, and compaction keeps
the acker's changelog bounded."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from service.brokers.admin import COMPACTED, ROLLED, topology_topics
from service.config import ServiceSettings
from service.run.runner import Job
from streams.kafka.clients import new_consumer, new_producer
from streams.wire.naming import acker_changelog_topic, acker_topic, component_topic
from tests.integration.conftest import EXAMPLES, TestBroker, assert_at_least, corpus_slice, direct_count, run_job

pytestmark = pytest.mark.broker


def watermarks(bootstrap: str, topic: str) -> list[tuple[int, int]]:
    """``(low, high)`` per partition, from ListOffsets."""
    c = new_consumer({"bootstrap.servers": bootstrap, "group.id": f"t.wm.{uuid.uuid4().hex[:6]}", "log_level": 0})
    try:
        n = len(c.list_topics(topic, timeout=10).topics[topic].partitions)
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in range(n)]
    finally:
        c.close()


def records_in(bootstrap: str, topic: str) -> int:
    """How many records the topic holds now (read from its start to its end)."""
    c = new_consumer({"bootstrap.servers": bootstrap, "group.id": f"t.count.{uuid.uuid4().hex[:6]}", "enable.auto.commit": False, "log_level": 0})
    try:
        marks = watermarks(bootstrap, topic)
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(len(marks))])
        n, pos, deadline = 0, dict.fromkeys(range(len(marks)), -1), time.monotonic() + 60
        while any(pos[p] < high - 1 for p, (_, high) in enumerate(marks) if high > 0) and time.monotonic() < deadline:
            for m in c.consume(10000, 0.2):
                if not m.error():
                    n += 1
                    pos[m.partition() or 0] = m.offset() or 0
        return n
    finally:
        c.close()


def test_every_topic_has_an_explicit_policy(broker: TestBroker, settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    job, _ = run_job(EXAMPLES / "wordcount_exactly_once.py", corpus_slice(corpus, tmp_path / "in.txt", 200), tmp_path / "out.json", settings)
    specs = topology_topics(job.topology, job.conf)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 0})
    if broker.kind == "tansu":  # it answers DescribeConfigs with nothing: the settings are what Squall asked for
        assert all(spec.config["cleanup.policy"] in ("compact", "delete") and "retention.ms" in spec.config for spec in specs.values())
        return
    got = {r.name: {k: v.value for k, v in f.result().items()} for r, f in admin.describe_configs([ConfigResource("topic", t) for t in specs]).items()}
    for topic, spec in specs.items():
        for key in ("cleanup.policy", "retention.ms", "retention.bytes"):
            assert got[topic][key] == spec.config[key], (topic, key, got[topic][key])
    compacted = {t for t, spec in specs.items() if spec.config == COMPACTED}
    assert {acker_changelog_topic(job.name), f"squall.{job.name}.__ledger", f"squall.{job.name}.__coordinator"} <= compacted
    assert got[component_topic(job.name, "count")]["retention.ms"] == str(job.conf.topic_retention_ms)
    # the purged and compacted topics roll a segment a minute, so what was purged leaves the disk and compaction reaches the
    # latest records (admin.ROLLED); the kept ones roll a tenth of their retention (admin.kept_for)
    for topic, spec in specs.items():
        rolled = (got[topic]["segment.ms"], got[topic]["segment.bytes"]) == (ROLLED["segment.ms"], ROLLED["segment.bytes"])
        assert rolled == (spec.purged or spec.config["cleanup.policy"] == "compact"), (topic, got[topic]["segment.ms"], spec.purged)
        assert got[topic]["segment.ms"] == spec.config["segment.ms"], topic
    assert specs[component_topic(job.name, "count")].purged and specs[acker_topic(job.name)].purged


def test_consumers_purge_what_they_committed_and_nothing_is_lost(broker: TestBroker, settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 20_000)
    out = tmp_path / "counts.json"
    job, summary = run_job(EXAMPLES / "wordcount.py", src, out, settings, conf_overrides={"squall.topic.purge.interval.secs": 0.5})
    assert_at_least(json.loads(out.read_text()), direct_count(src))
    between = [component_topic(job.name, "split"), component_topic(job.name, "count"), acker_topic(job.name)]
    lows = {t: [low for low, _ in watermarks(broker.bootstrap, t)] for t in between}
    highs = {t: sum(high for _, high in watermarks(broker.bootstrap, t)) for t in between}
    purged = sum(s["counters"].get("purged_records", 0) for s in job.board_snapshots())
    print(f"purged {purged} records; log start offsets {lows}; written {highs}")
    if broker.kind == "tansu":  # no DeleteRecords there: Squall never asks
        assert purged == 0 and all(low == 0 for ls in lows.values() for low in ls)
        return
    assert purged > 0
    for t in between:  # nearly everything written between components is gone once consumed
        assert sum(lows[t]) >= 0.5 * highs[t], (t, lows[t], highs[t])
    assert summary.records == 20_000


def test_compaction_keeps_the_acker_changelog_bounded(broker: TestBroker, settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    if broker.kind == "tansu":
        pytest.fail("the embedded broker never compacts: run this test on Apache Kafka (SQUALL_TEST_BROKER=kafka)")
    src = corpus_slice(corpus, tmp_path / "in.txt", 60_000)
    out = tmp_path / "counts.json"
    # Every tree reaches the changelog (persist after 0 s) and every record is its own tree, so it
    # is written ~4 times a tree; small segments that roll at once, and a cleaner that runs often.
    overrides = {"squall.acker.persist.after.secs": 0, "squall.spout.tree.records": 1}
    job = Job(EXAMPLES / "wordcount.py", src, out, settings, conf_overrides=overrides)
    changelog = acker_changelog_topic(job.name)
    small = {
        "segment.bytes": str(1 << 20),
        "segment.ms": "1000",
        "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "1000",
        "min.compaction.lag.ms": "0",
    }
    try:
        job.start(produce_input=False)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 0})
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in small.items()]
        for f in admin.incremental_alter_configs([ConfigResource("topic", changelog, incremental_configs=entries)]).values():
            f.result()
        job.wait_ready()
        job.produce_input()
        job.wait(300)
    finally:
        job.close()
    # The active segment is never compacted: once it is older than segment.ms, one more record
    # (a tombstone of a root nobody has) rolls it, as the acker's next write would.
    time.sleep(1.5)
    producer = new_producer({"bootstrap.servers": broker.bootstrap, "log_level": 0})
    for p in range(len(watermarks(broker.bootstrap, changelog))):
        producer.produce(changelog, None, key=(2**64 - 1).to_bytes(8, "big"), partition=p)
    producer.flush(10)
    written = sum(high for _, high in watermarks(broker.bootstrap, changelog))
    deadline, held = time.monotonic() + 120, written
    while time.monotonic() < deadline:
        held = records_in(broker.bootstrap, changelog)
        if held <= written / 4:
            break
        time.sleep(3)
    print(f"acker changelog: {written} records written, {held} held after compaction")
    assert written > 100_000
    assert held <= written / 4
