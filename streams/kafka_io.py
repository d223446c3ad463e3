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
