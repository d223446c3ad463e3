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
``... ends BOOTSTRAP TOPIC PARTITIONS`` -> the sum of the partitions' high watermarks from Fetch responses (records written);
``... late BOOTSTRAP TOPIC`` -> every record of a bolt's or the acker's topic written by a sender's older life after its newer
life's record or epoch marker in the same partition (:func:`late_records`): ``[topic, partition, offset, sender, epoch, newer]``.
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


def late_records(topic: str, records: list[tuple[int, int, list[tuple[int, int]]]]) -> list[list[Any]]:
    """The records of ``topic`` that no reader may take: ``records`` are ``(partition, offset, [(sender, epoch), ...])``
    in offset order per partition; a record is late if one of its senders wrote in a newer epoch before it in its partition.

    >>> late_records("t", [(0, 0, [(1, 100)]), (0, 1, [(1, 200)]), (0, 2, [(1, 100)]), (1, 3, [(1, 100)])])
    [['t', 0, 2, 1, 100, 200]]
    """
    newest: dict[tuple[int, int], int] = {}
    out = []
    for partition, offset, senders in records:
        late = [(s, e, newest[(partition, s)]) for s, e in senders if newest.get((partition, s), -1) > e]
        if late:
            out.append([topic, partition, offset, *late[0]])
        for s, e in senders:
            newest[(partition, s)] = max(e, newest.get((partition, s), -1))
    return out


def _senders(topic: str, value: bytes | None, headers: Any) -> list[tuple[int, int]]:
    """``(sender, epoch)`` of a record: a marker's tasks, a tuple record's or pack's tuples, an acker record's ``squall.from``."""
    from streams.wire.acker import read_from
    from streams.wire.codec import decode_marker, decode_tuples

    if topic.endswith(".__acker"):
        origin = read_from(headers)
        return [] if origin is None else [origin]
    marker = decode_marker(value)
    if marker is not None:
        return [(task, marker[2]) for task in marker[1]]
    return [(env[2], env[3]) for env in decode_tuples(value, component="netns-client", topic=topic, partition=0, offset=0)]


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
    if what == "late":
        from confluent_kafka import OFFSET_BEGINNING

        from streams.kafka.clients import at_high_watermarks

        c = Consumer({"bootstrap.servers": argv[1], "group.id": f"netns-late-{argv[2]}", "enable.auto.commit": False, "log_level": 0})
        try:
            tps = [TopicPartition(argv[2], q, OFFSET_BEGINNING) for q in c.list_topics(argv[2], timeout=10).topics[argv[2]].partitions]
            c.assign(tps)
            records: list[tuple[int, int, list[tuple[int, int]]]] = []
            quiet = 0.0
            while quiet < 0.6 or not at_high_watermarks(c, [TopicPartition(argv[2], tp.partition) for tp in tps]):
                msgs = c.consume(5000, 0.2)
                quiet = 0.0 if msgs else quiet + 0.2
                records += [(m.partition() or 0, m.offset() or 0, _senders(argv[2], m.value(), m.headers())) for m in msgs if not m.error()]
            records.sort(key=lambda r: (r[0], r[1]))
            return late_records(argv[2], records)
        finally:
            c.close()
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
