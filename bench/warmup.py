"""Warm a fresh Apache Kafka broker's JVM before anything on it is measured.

A broker started for a benchmark runs its request paths interpreted at first; the JIT compiles
them over the first tens of seconds of traffic. Measured on this two-core machine, the latency
workload (``bench/topologies/latency.py``) at 9,500 records/s on a broker just started: complete
latency p99 per second 100-390 ms for the first four seconds, settling to 40-60 ms after 13 s;
the same run on the same broker, twice more: 25-45 ms from the start. A service's broker has run
for months, so the bench warms each fresh broker first, with traffic of no contender's: the
same for all, so whichever contender runs first is not measured on a cold JIT.

The traffic (``seconds`` long, in threads of the bench's process), on topics of four partitions
that are deleted afterwards:

* idempotent producers (``acks=all``) of 100-byte records at a few thousand a second, a
  transactional producer committing every 20 records, and a consumer group committing its
  offsets (``read_committed``);
* a producer of large batches at 100,000 records a second (the benches' input producer's
  settings), a consumer reading it at full speed, and ``DeleteRecords`` below what it read every 0.5 s;
* a compacted topic (``cleanup.policy=compact``) written with keys.

The trickle alone was not enough: the throughput workloads push large batches at up to 100,000
records a second, and with 30 s of it the first contender measured still spent 10-15% more CPU a
record than the same run later on the same broker (flights, squall-acked: 71,698 against 88,890
records/s, 16.9 against 15.0 us a record). The embedded broker (native code) needs none.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from bench.feeder import produce
from service.brokers import ensure_topics

PARTITIONS = 4
RATE = 2_000
"""Records a second of each plain producer (two of them)."""
TRICKLE = {"acks": "all", "enable.idempotence": True, "linger.ms": 1}
"""The plain producers' settings, over the input producer's (:data:`bench.feeder.BATCHING`): idempotent, small batches."""
FAST_RATE = 100_000
"""Records a second of the large-batch producer: about the fastest workload's rate (flights), 10 MB/s."""


def _until(value: bytes, until: float, stop: threading.Event) -> Iterator[bytes]:
    """``value`` again and again until ``until`` (monotonic seconds) or ``stop``."""
    while time.monotonic() < until and not stop.is_set():
        yield value


def _produce(bootstrap: str, topic: str, until: float, stop: threading.Event) -> None:
    produce(bootstrap, topic, _until(b"w" * 100, until, stop), wrap=False, rate=RATE, partitions=PARTITIONS, conf=TRICKLE)


def _transact(bootstrap: str, topic: str, until: float, stop: threading.Event) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-warmup-{uuid.uuid4().hex[:6]}", "log_level": 0})
    p.init_transactions(30)
    while time.monotonic() < until and not stop.is_set():
        p.begin_transaction()
        for i in range(20):
            p.produce(topic, b"t" * 100, partition=i % PARTITIONS)
        p.commit_transaction(30)
        time.sleep(0.01)


def _blast(bootstrap: str, topic: str, until: float, stop: threading.Event) -> None:
    """Large batches at :data:`FAST_RATE`, as the benches write a workload's input (:func:`bench.feeder.produce`)."""
    produce(bootstrap, topic, _until(b"b" * 100, until, stop), wrap=False, rate=FAST_RATE, partitions=PARTITIONS)


def _drain(bootstrap: str, topic: str, until: float, stop: threading.Event) -> None:
    """Read ``topic`` at full speed, and delete what was read every 0.5 s (as Squall purges a bolt's input)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-warmup-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False, "log_level": 0})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    read: dict[int, int] = {}
    purge_at = time.monotonic() + 0.5
    try:
        while time.monotonic() < until and not stop.is_set():
            for m in c.consume(10000, 0.05):
                if m.error() is None:
                    read[m.partition() or 0] = (m.offset() or 0) + 1
            if time.monotonic() >= purge_at and read:
                purge_at = time.monotonic() + 0.5
                for f in admin.delete_records([TopicPartition(topic, p, o) for p, o in read.items()]).values():
                    f.result(30)
    finally:
        c.close()


def _compacted(bootstrap: str, topic: str, until: float, stop: threading.Event) -> None:
    """Keyed records on a compacted topic (changelogs: both Squall's and Quix's)."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "log_level": 0})
    n = 0
    while time.monotonic() < until and not stop.is_set():
        p.produce(topic, b"c" * 50, key=str(n % 500).encode(), partition=n % PARTITIONS)
        n += 1
        if n % 1000 == 0:
            p.poll(0)
            time.sleep(0.05)
    p.flush(10)


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
    tag = uuid.uuid4().hex[:6]
    topic, fast, keyed = f"bench.warmup.{tag}", f"bench.warmup.{tag}.fast", f"bench.warmup.{tag}.keyed"
    ensure_topics(bootstrap, {topic: PARTITIONS, fast: PARTITIONS})
    ensure_topics(bootstrap, {keyed: PARTITIONS}, configs={keyed: {"cleanup.policy": "compact", "segment.ms": "5000"}})
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
        guarded(_blast, bootstrap, fast, until, stop),
        guarded(_drain, bootstrap, fast, until, stop),
        guarded(_compacted, bootstrap, keyed, until, stop),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    for done in admin.delete_topics([topic, fast, keyed]).values():
        done.result(30)  # waited for, with the client kept: one dropped at once may never send the request
    if errors:
        raise RuntimeError(f"warming the broker at {bootstrap} failed: {errors[0]!r}")
