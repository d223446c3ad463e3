"""Kafka client settings and a produce helper (the data plane's only Kafka edge)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from streams.config import TopologyConfig

log = logging.getLogger("squall.kafka")


def consumer_config(bootstrap: str, group: str, conf: TopologyConfig, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Consumer settings tuned for both real Kafka and the embedded broker (fetch wait
    ``squall.kafka.fetch.wait.max.ms``, session ``squall.kafka.session.timeout.ms``)."""
    cfg: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "session.timeout.ms": conf.session_timeout_ms,
        "heartbeat.interval.ms": max(500, conf.session_timeout_ms // 6),
        "fetch.wait.max.ms": conf.fetch_wait_max_ms,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
        "topic.metadata.refresh.interval.ms": 5000,
        "log_level": 3,
    }
    cfg.update(overrides or {})
    return cfg


class DeliveryTracker:
    """Counts delivery failures reported by librdkafka (thread-safe).

    An executor compares ``failures`` before and after a flush: if outputs were lost,
    it fails the trees it was about to ack, so they are replayed.
    """

    def __init__(self, component: str) -> None:
        self.component = component
        self.failures = 0
        self._lock = threading.Lock()

    def __call__(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            with self._lock:
                self.failures += 1
            log.error("[%s] delivery to %s[%s] failed: %s", self.component, msg.topic(), msg.partition(), err)


def producer_config(bootstrap: str, conf: TopologyConfig, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "linger.ms": conf.linger_ms,
        "acks": "all",
        "queue.buffering.max.messages": 500_000,
        "batch.num.messages": 10_000,
        "log_level": 3,
    }
    cfg.update(overrides or {})
    return cfg


def make_producer(bootstrap: str, conf: TopologyConfig, component: str, overrides: Mapping[str, Any] | None = None) -> tuple[Producer, DeliveryTracker]:
    tracker = DeliveryTracker(component)
    cfg = producer_config(bootstrap, conf, overrides)
    cfg["on_delivery"] = tracker
    return Producer(cfg), tracker


def produce_fn(producer: Producer) -> Callable[..., None]:
    """``produce(topic, value, key=None, partition=-1, headers=None)`` that waits (polls)
    while the local queue is full instead of raising BufferError."""
    p = producer.produce
    poll = producer.poll

    def produce(topic: str, value: bytes, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
        while True:
            try:
                if headers is None:
                    p(topic, value, key, partition)
                else:
                    p(topic, value, key, partition, headers=headers)
                return
            except BufferError:
                poll(0.05)

    return produce


def true_end_offsets(bootstrap: str, tps: list[tuple[str, int]], timeout_s: float = 10.0, *, component: str = "?") -> dict[tuple[str, int], int]:
    """The end offset (high watermark) of each partition, taken from Fetch responses.

    ListOffsets(LATEST) can sit below the true end on the embedded broker, so
    ``OFFSET_END`` cannot be trusted there; a Fetch response's high watermark can.
    Raises ``TimeoutError`` naming ``component`` if a partition's high watermark is not
    known in time.
    """
    import time

    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "squall.__watermarks",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
            "log_level": 0,
        }
    )
    try:
        c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in tps])
        ends: dict[tuple[str, int], int] = {}
        deadline = time.monotonic() + timeout_s
        while len(ends) < len(tps):
            c.consume(1, 0.1)
            for t, p in tps:
                high = c.get_watermark_offsets(TopicPartition(t, p), cached=True)[1]
                if high is not None and high >= 0:
                    ends[(t, p)] = high
            if time.monotonic() > deadline:
                missing = [tp for tp in tps if tp not in ends]
                raise TimeoutError(f"[{component}] no high watermark for {missing} after {timeout_s} s (is the broker at {bootstrap} up?)")
        return ends
    finally:
        c.close()
