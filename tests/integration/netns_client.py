"""What a test asks from a client host of a :class:`tests.integration.netns.Lan` (run there with ``ip netns exec``); prints JSON.

``python -m tests.integration.netns_client http URL`` -> ``[status, body]``;
``... http URL URL ...`` -> one ``[status, body]`` a URL, asked in turn (one process for several);
``... committed BOOTSTRAP GROUP TOPIC PARTITIONS`` -> committed offsets;
``... counts BOOTSTRAP TOPIC`` -> ``{word: count}`` summed over the counts topic;
``... events BOOTSTRAP TOPIC`` -> every record of the events topic;
``... dlq BOOTSTRAP TOPOLOGY`` -> the headers of each of the topology's dead letters;
``... state URL NAME`` -> a transactional state's ``{key: value}``;
``... tcp HOST PORT`` -> 0 if a connection is accepted, else the errno;
``... brokers BOOTSTRAP`` -> how many brokers each answering node lists (the fewest; 0 if none answers);
``... leader BOOTSTRAP TOPIC PARTITION`` -> the node id that leads it (-1: none);
``... ends BOOTSTRAP TOPIC PARTITIONS`` -> the sum of the partitions' high watermarks from Fetch responses (records written).
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections import Counter
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from service.brokers.admin import read_topic


def _get(url: str) -> list[Any]:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        return [e.code, e.read().decode()]
    except OSError as e:
        return [0, str(e)]


def main(argv: list[str]) -> Any:
    what = argv[0]
    if what == "http":
        got = [_get(url) for url in argv[1:]]
        return got[0] if len(got) == 1 else got
    if what == "tcp":
        import socket

        with socket.socket() as sock:
            sock.settimeout(1)
            return sock.connect_ex((argv[1], int(argv[2])))
    if what == "brokers":
        from confluent_kafka.admin import AdminClient

        seen = []
        for address in argv[1].split(","):
            try:
                seen.append(len(AdminClient({"bootstrap.servers": address, "log_level": 0}).list_topics(timeout=2).brokers))
            except Exception:
                return 0
        return min(seen)
    if what == "leader":
        from confluent_kafka.admin import AdminClient

        md = AdminClient({"bootstrap.servers": argv[1], "log_level": 0}).list_topics(argv[2], timeout=10).topics.get(argv[2])
        part = None if md is None else md.partitions.get(int(argv[3]))
        return -1 if part is None else part.leader
    if what == "ends":
        from streams.kafka.clients import true_end_offsets

        return sum(true_end_offsets(argv[1], [(argv[2], p) for p in range(int(argv[3]))], component="netns-client").values())
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
    if what == "dlq":
        from service.query.dlq import read_dead_letters

        return [letter.headers for letter in read_dead_letters(argv[1], argv[2])]
    if what == "state":
        from streams.state import TransactionalState, open_backend

        return dict(TransactionalState(open_backend(argv[1]), argv[2]).items())
    raise SystemExit(f"unknown request {what}")


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
