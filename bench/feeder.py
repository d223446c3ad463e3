"""How the benches write their input: a producer of batches, optionally paced to a rate."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Producer

BATCHING = {"linger.ms": 20, "batch.num.messages": 10000, "queue.buffering.max.messages": 1_000_000}
"""The input producer's batching: large batches, a deep queue."""


def produce(
    bootstrap: str, topic: str, lines: Iterable[bytes], wrap: bool, rate: float | None = None, partitions: int = 1, conf: dict[str, Any] | None = None
) -> int:
    """Produce ``lines`` (as ``{"v", "ts"}`` JSON when ``wrap``) round-robin over ``partitions``, optionally paced to ``rate``/s; returns how many.

    ``conf``: producer settings over :data:`BATCHING`. Waits up to 60 s for delivery at the end.
    """
    p = Producer({"bootstrap.servers": bootstrap, **BATCHING, "log_level": 0, **(conf or {})})
    start = time.monotonic()
    n = 0
    for line in lines:
        value = json.dumps({"v": line.decode("utf-8", "replace"), "ts": time.time()}).encode() if wrap else line
        while True:
            try:
                p.produce(topic, value, partition=n % partitions)
                break
            except BufferError:
                p.poll(0.05)
        n += 1
        if rate:
            ahead = start + n / rate - time.monotonic()
            if ahead > 0:
                p.poll(0)
                time.sleep(ahead)
    p.flush(60)
    return n
