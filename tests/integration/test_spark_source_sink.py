"""The squall-kafka source and sink on their own, in a real Spark query on a real broker."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from service.brokers.admin import ensure_topics
from tests.integration.conftest import wait_idle


def produce(bootstrap: str, topic: str, values: list[str], partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i, v in enumerate(values):
        p.produce(topic, v.encode(), key=str(i).encode(), partition=i % partitions)
    assert p.flush(30) == 0


class TopicReader:
    """Reads a topic incrementally from the beginning (all partitions)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}", "fetch.wait.max.ms": 50, "log_level": 0})
        self.c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        self.values: list[str] = []

    def poll(self) -> int:
        for m in self.c.consume(10000, 0.2):
            if not m.error():
                self.values.append(m.value().decode())
        return len(self.values)


def start(spark: Any, bootstrap: str, tin: str, tout: str, ckpt: Path) -> Any:
    df = spark.readStream.format("squall-kafka").option("bootstrap.servers", bootstrap).option("subscribe", tin).option("maxOffsetsPerTrigger", "1000").load()
    return (
        df.selectExpr("key", "upper(cast(value as string)) as value")
        .writeStream.format("squall-kafka")
        .option("bootstrap.servers", bootstrap)
        .option("topic", tout)
        .option("checkpointLocation", str(ckpt))
        .trigger(processingTime="100 milliseconds")
        .start()
    )


def test_restart_from_checkpoint_loses_and_duplicates_nothing(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    tin, tout = f"ss-in-{tag}", f"ss-out-{tag}"
    ensure_topics(bootstrap, {tin: 3, tout: 2})
    first = [f"rec-{i}" for i in range(3000)]
    second = [f"rec-{i}" for i in range(3000, 5000)]
    produce(bootstrap, tin, first, 3)
    reader = TopicReader(bootstrap, tout, 2)

    q = start(spark, bootstrap, tin, tout, tmp_path / "ckpt")
    wait_idle(q, lambda: reader.poll() >= len(first))
    rows = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    q.stop()
    assert sum(rows) == len(first)
    assert max(rows) <= 1000 and len(rows) >= 3  # maxOffsetsPerTrigger caps each micro-batch

    produce(bootstrap, tin, second, 3)  # arrives while the query is down
    q = start(spark, bootstrap, tin, tout, tmp_path / "ckpt")
    wait_idle(q, lambda: reader.poll() >= len(first) + len(second))
    q.stop()
    reader.poll()

    got = Counter(reader.values)
    assert got == Counter(v.upper() for v in first + second)  # every record exactly once
