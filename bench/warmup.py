"""Warm a fresh Apache Kafka broker's JVM before anything on it is measured.

A broker started for a benchmark runs its request paths interpreted at first; the JIT compiles
them over the first tens of seconds of traffic. Measured on this two-core machine, the latency
workload (``bench/topologies/latency.py``) at 9,500 records/s on a broker just started: complete
latency p99 per second 100-390 ms for the first four seconds, settling to 40-60 ms after 13 s;
the same run on the same broker, twice more: 25-45 ms from the start. A service's broker has run
for months, so the bench warms each fresh broker first, with traffic of no contender's: the
same for all, so whichever contender runs first is not measured on a cold JIT.

The traffic (``seconds`` long, in threads of the bench's process): idempotent producers
(``acks=all``) of 100-byte records at a few thousand a second, a transactional producer
committing every 20 records, and a consumer group committing its offsets, on a topic of four
partitions that is deleted afterwards. The embedded broker (native code) needs none.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from service.admin import ensure_topics

PARTITIONS = 4
RATE = 2_000
"""Records a second of each plain producer (two of them)."""


def _produce(bootstrap: str, topic: str, until: float, stop: threading.Event) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 1, "log_level": 0})
    value, n, start = b"w" * 100, 0, time.monotonic()
    while time.monotonic() < until and not stop.is_set():
        p.produce(topic, value, partition=n % PARTITIONS)
        n += 1
        p.poll(0)
        ahead = start + n / RATE - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
    p.flush(10)


def _transact(bootstrap: str, topic: str, until: float, stop: threading.Event) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-warmup-{uuid.uuid4().hex[:6]}", "log_level": 0})
    p.init_transactions(30)
    while time.monotonic() < until and not stop.is_set():
        p.begin_transaction()
        for i in range(20):
            p.produce(topic, b"t" * 100, partition=i % PARTITIONS)
        p.commit_transaction(30)
        time.sleep(0.01)


def _consume(bootstrap: str, topic: str, group: str, until: float, stop: threading.Event) -> None:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "auto.commit.interval.ms": 100,
            "isolation.level": "read_committed",
            "log_level": 0,
        }
    )
    c.subscribe([topic])
    try:
        while time.monotonic() < until and not stop.is_set():
            c.consume(500, 0.05)
    finally:
        c.close()


def warm_broker(bootstrap: str, seconds: float) -> None:
    """Send ``seconds`` of neutral traffic to the broker at ``bootstrap`` (see the module's docstring); 0 does nothing.

    Raises:
      RuntimeError: a warm-up thread failed (its error is named), so the broker is not fit to measure.
    """
    if seconds <= 0:
        return
    topic = f"bench.warmup.{uuid.uuid4().hex[:6]}"
    ensure_topics(bootstrap, {topic: PARTITIONS})
    until, stop = time.monotonic() + seconds, threading.Event()
    errors: list[BaseException] = []

    def guarded(fn: Callable[..., None], *args: object) -> threading.Thread:
        def body() -> None:
            try:
                fn(*args)
            except (KafkaException, OSError, RuntimeError) as exc:
                errors.append(exc)
                stop.set()

        return threading.Thread(target=body, name=f"warmup-{fn.__name__}", daemon=True)

    group = f"bench-warmup-{uuid.uuid4().hex[:6]}"
    threads = [
        guarded(_produce, bootstrap, topic, until, stop),
        guarded(_produce, bootstrap, topic, until, stop),
        guarded(_transact, bootstrap, topic, until, stop),
        guarded(_consume, bootstrap, topic, group, until, stop),
        guarded(_consume, bootstrap, topic, group, until, stop),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    AdminClient({"bootstrap.servers": bootstrap}).delete_topics([topic])
    if errors:
        raise RuntimeError(f"warming the broker at {bootstrap} failed: {errors[0]!r}")
