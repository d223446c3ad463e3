"""KafkaBolt and what ``squall run`` shows (issue 30), on real brokers: storm-starter's
ExclamationTopology ending in a KafkaBolt writes every word; a topic that does not exist (auto-create
off, Apache Kafka) fails the deliveries, and the tuples replay until it does; a topology without an
output says how to declare one, and ``--show`` prints a stream's tuples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from service.brokers.admin import read_records
from service.brokers.apache_kafka import ApacheKafka
from service.config import ServiceSettings
from service.run.runner import Job
from streams.kafka.clients import new_admin
from tests.integration.conftest import CACHE, EXAMPLES, TOPOLOGIES, corpus_slice, kit_run

ROOT = EXAMPLES.parent

pytestmark = [pytest.mark.broker, pytest.mark.embedded]


def exclaimed(src: Path) -> Counter[str]:
    return Counter(w + "!!!!!!" for line in src.read_text().splitlines() for w in line.split())


@pytest.mark.kafka_only  # the KafkaBolt's embedded-broker path is run by test_squall_run_says_how_to_declare_an_output_and_shows_a_stream (CI time)
def test_the_exclamation_topology_writes_every_word_to_its_kafka_bolts_topic(settings: ServiceSettings, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 2_000)
    out = tmp_path / "exclaimed.jsonl"
    job = Job(EXAMPLES / "exclamation.py", src, out, settings)
    try:
        job.start()
        summary = job.wait(300)
    finally:
        job.close()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    got = Counter(r["value"] for r in rows)
    want = exclaimed(src)
    assert not want - got, f"missing: {list((want - got).items())[:5]}"  # every word, at least once
    (kit,) = kit_run(EXAMPLES / "exclamation.py", src).sinks.values()
    assert Counter(r.value().decode() for r in kit) == want and set(got) == set(want)  # the test kit agrees with the broker
    assert all(r["topic"] == f"squall.{job.name}.exclaimed" and r["value"] == r["key"] + "!!!!!!" for r in rows)
    assert summary.output == str(out) and summary.keys == len(rows) and summary.output_unit == "records"
    assert summary.trees_acked == 2_000 and summary.dead_lettered == 0
    print(f"exclamation: {len(rows)} records for {sum(want.values())} words; {summary.lines()[-3]}")


def test_squall_run_says_how_to_declare_an_output_and_shows_a_stream(tmp_path: Path) -> None:
    """As a new user runs it: the embedded broker, no output declared."""
    src = tmp_path / "in.txt"
    src.write_text("hello storm\nhello squall\n")
    run = [sys.executable, "-m", "service.cli", "run", str(TOPOLOGIES / "tiny_words.py"), "--input", str(src), "--no-progress"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SQUALL_")} | {"SQUALL_DATA_DIR": str(tmp_path / "data")}
    plain = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert plain.returncode == 0, plain.stderr
    assert "output              none declared: end the topology in a KafkaBolt or call TopologyBuilder.set_output(...)" in plain.stdout
    shown = subprocess.run([*run, "--show", "words"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert shown.returncode == 0, shown.stderr
    tuples = [json.loads(line) for line in shown.stdout.splitlines() if line.startswith("{")]
    assert sorted(t["tuple"]["word"] for t in tuples) == ["hello", "hello", "squall", "storm"]
    assert {t["stream"] for t in tuples} == {"words:default"}
    wrong = subprocess.run([*run, "--show", "nope"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert wrong.returncode == 2 and wrong.stderr.startswith("error: [nope] --show: no such component") and "Traceback" not in wrong.stderr


def test_a_delivery_failure_fails_the_tuple_and_it_replays_until_delivered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Apache Kafka with topic auto-creation off: the sink's topic does not exist, each delivery
    times out (2 s) and fails its tuple, the spout replays it; once the topic exists, every line
    is delivered."""
    kafka = ApacheKafka(workdir=tmp_path / "kafka", cache=CACHE, config={"auto.create.topics.enable": "false"})
    bootstrap = kafka.start()
    try:
        topic = f"late.{uuid.uuid4().hex[:8]}"
        monkeypatch.setenv("SQUALL_TEST_SINK_TOPIC", topic)
        src = tmp_path / "in.txt"
        lines = [f"line {i}" for i in range(200)]
        src.write_text("\n".join(lines) + "\n")
        settings = ServiceSettings(bootstrap_servers=bootstrap, data_dir=tmp_path / "data", log_level="INFO")
        job = Job(TOPOLOGIES / "late_sink.py", src, None, settings)
        try:
            job.start()
            assert job.board is not None
            deadline = time.monotonic() + 120
            while job.board.total("spout", "failed") < 1:  # deliveries time out: the trees fail
                job.board.poll(0.5)
                assert time.monotonic() < deadline, "no tuple failed"
            admin = new_admin({"bootstrap.servers": bootstrap})
            for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
                f.result()
            summary = job.wait(300)
        finally:
            job.close()
        delivered = Counter(v.decode() for _, v in read_records(bootstrap, topic) if v is not None)
        assert set(delivered) == set(lines)  # every line, once the topic exists
        assert summary.replays["fail"] >= 1 and summary.dead_lettered == 0 and summary.trees_acked == 200
        print(f"missing topic: {summary.trees_failed} message ids failed, replayed {summary.replays}; then {len(delivered)} lines delivered")
    finally:
        kafka.stop()
