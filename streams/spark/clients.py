"""Kafka clients cached per Python worker process (Spark reuses its Python workers).

Spark pickles readers and writers to its executors; Kafka clients cannot be pickled and
cost ~100 ms to create, so every process keeps one client per distinct configuration.
Clients are never closed explicitly: they live as long as the worker process.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, Producer

from streams.kafka.clients import RELIABLE_PRODUCER, DeliveryTracker, new_consumer, new_producer

_lock = threading.Lock()
_consumers: dict[tuple[Any, ...], Consumer] = {}
_producers: dict[tuple[Any, ...], tuple[Producer, DeliveryTracker]] = {}


def _key(conf: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted((k, str(v)) for k, v in conf.items()))


def consumer(conf: Mapping[str, Any]) -> Consumer:
    """An assign-only consumer for ``conf`` (no group membership is ever joined).

    The caller assigns partitions per read; one consumer is shared by the reads of one
    process, which Spark runs one at a time per Python worker.
    """
    key = _key(conf)
    with _lock:
        c = _consumers.get(key)
        if c is None:
            cfg = {"group.id": "squall.__spark", "enable.auto.commit": False, "enable.partition.eof": False, "log_level": 3, **conf}
            c = _consumers[key] = new_consumer(cfg)
        return c


def producer(conf: Mapping[str, Any], component: str) -> tuple[Producer, DeliveryTracker]:
    """A producer for ``conf`` plus the tracker counting its failed deliveries."""
    key = (*_key(conf), component)
    with _lock:
        got = _producers.get(key)
        if got is None:
            tracker = DeliveryTracker(component)
            cfg = {**RELIABLE_PRODUCER, "queue.buffering.max.messages": 500_000, "batch.num.messages": 10_000, "log_level": 3, **conf, "on_delivery": tracker}
            got = _producers[key] = (new_producer(cfg), tracker)
        return got
