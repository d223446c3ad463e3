"""A replaced worker's late record, made on purpose: ``python zombie.py BOOTSTRAP GO_FILE TOPIC COMPONENT TASK EPOCH WORD``.

Run on a host that is about to be cut off (``ip netns exec``). It connects to the broker first
(a record to a scratch topic: the connection to the partition leader is open before the cut),
then waits for ``GO_FILE``, which names a partition. It then writes, as the old life ``EPOCH``
of ``COMPONENT``'s global task ``TASK`` would, one tuple ``[WORD]`` to that partition of ``TOPIC``: while the host is cut off,
the kernel holds it and retransmits it; it lands after the heal, past the new life's epoch
marker and the readers' restarts. Prints ``[partition, offset]`` once the broker took it.

The cut-off host's own workers rarely leave such a record today (a fenced worker resets its
connections, and at the cut little is in flight): this one has the exact identity (sender
task, epoch) and wire form of theirs.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from streams.wire.codec import encode_rooted

WARMUP = "netns-zombie-warmup"


def main() -> int:
    bootstrap, go, topic, component, task, epoch, word = sys.argv[1:8]
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    for fut in admin.create_topics([NewTopic(WARMUP, 1, 1)]).values():
        try:
            fut.result(30)
        except Exception as exc:  # already there
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "message.timeout.ms": 300_000, "log_level": 0})
    producer.produce(WARMUP, b"warm-up", partition=0)
    if producer.flush(30) != 0:
        print("the warm-up record was not delivered", file=sys.stderr)
        return 1
    print("connected", flush=True)
    while not Path(go).exists() or not Path(go).read_text().strip():
        time.sleep(0.05)
    partition = int(Path(go).read_text())
    got: list[list[int]] = []
    value = encode_rooted("default", component, int(task), int(epoch), [word], 0x5A5A5A5A, 0x2B2B2B2B)
    producer.produce(topic, value, partition=partition, on_delivery=lambda err, msg: got.append([msg.partition(), msg.offset()]) if not err else None)
    producer.flush(300)
    print(json.dumps(got[0] if got else None), flush=True)
    return 0 if got else 1


if __name__ == "__main__":
    sys.exit(main())
