"""What a test asks from a client host of a :class:`tests.integration.netns.Lan` (run there with ``ip netns exec``); prints JSON.

``python -m tests.integration.netns_client http URL`` -> ``[status, body]``;
``... committed BOOTSTRAP GROUP TOPIC PARTITIONS`` -> committed offsets;
``... counts BOOTSTRAP TOPIC`` -> ``{word: count}`` summed over the counts topic;
``... events BOOTSTRAP TOPIC`` -> every record of the events topic;
``... state URL NAME`` -> a transactional state's ``{key: value}``;
``... tcp HOST PORT`` -> 0 if a connection is accepted, else the errno.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections import Counter
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from service.admin import read_topic


def main(argv: list[str]) -> Any:
    what = argv[0]
    if what == "http":
        try:
            with urllib.request.urlopen(argv[1], timeout=2) as r:
                return [r.status, r.read().decode()]
        except urllib.error.HTTPError as e:
            return [e.code, e.read().decode()]
        except OSError as e:
            return [0, str(e)]
    if what == "tcp":
        import socket

        with socket.socket() as sock:
            sock.settimeout(1)
            return sock.connect_ex((argv[1], int(argv[2])))
    if what == "committed":
        bootstrap, group, topic, parts = argv[1], argv[2], argv[3], int(argv[4])
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
        try:
            return [max(tp.offset, 0) for tp in c.committed([TopicPartition(topic, p) for p in range(parts)], timeout=10)]
        finally:
            c.close()
    if what == "counts":
        out: Counter[str] = Counter()
        for rec in read_topic(argv[1], argv[2]):
            out[rec["word"]] += rec["count"]
        return dict(out)
    if what == "events":
        return read_topic(argv[1], argv[2])
    if what == "state":
        from streams.state import TransactionalState, open_backend

        return dict(TransactionalState(open_backend(argv[1]), argv[2]).items())
    raise SystemExit(f"unknown request {what}")


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
