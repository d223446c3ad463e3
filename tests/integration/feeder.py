"""A separate producer process, as a user's own would be: ``python feeder.py BOOTSTRAP TOPIC
FILE SECONDS PARTITIONS``. Produces every line of FILE into TOPIC, round-robin over the
partitions, spread evenly over SECONDS; prints the count when every record is delivered.

Idempotent (``enable.idempotence``), as a user's producer must be to write each line once
across a leader failover: without it a retried request that the old leader had written is
written again (seen with a partition leader's host cut off: the input itself held duplicates).
On a secured Kafka it takes the TLS and SASL settings from ``SQUALL_KAFKA_*``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from confluent_kafka import Producer

from streams.kafka.clients import KafkaSecurity


def main() -> int:
    bootstrap, topic, path, seconds, partitions = sys.argv[1], sys.argv[2], Path(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    lines = [line for line in path.read_bytes().split(b"\n") if line.strip()]
    security = KafkaSecurity().librdkafka()  # SQUALL_KAFKA_*: a user's producer on a secured Kafka has its own credentials
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 5000, "log_level": 3, "enable.idempotence": True, **security})
    errors: list[str] = []
    start = time.monotonic()
    for i, line in enumerate(lines):
        wait = start + seconds * i / len(lines) - time.monotonic()
        if wait > 0:
            producer.poll(0)
            time.sleep(wait)
        producer.produce(topic, line, partition=i % partitions, on_delivery=lambda err, _m: errors.append(str(err)) if err else None)
    producer.flush(60)
    if errors:
        print(f"{len(errors)} records not delivered: {errors[0]}", file=sys.stderr)
        return 1
    print(len(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
