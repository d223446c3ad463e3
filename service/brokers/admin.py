"""Topic provisioning for a topology (the only admin calls Squall makes)."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic

from service.brokers.access import denied, why_unreachable
from service.exceptions import BrokerError, UsageError
from streams.config import TopologyConfig, resolve
from streams.kafka.changelog_store import SCHEME as CHANGELOG_SCHEME
from streams.kafka.clients import at_high_watermarks, new_admin, new_consumer
from streams.model.spec import Topology
from streams.wire.naming import (
    ack_result_topic,
    acker_changelog_topic,
    acker_topic,
    component_topic,
    coordinator_topic,
    dead_letter_topic,
    errors_topic,
    ledger_topic,
    metrics_topic,
    progress_topic,
    show_topic,
    state_changelog_topic,
    trace_topic,
)

DAY_MS = 24 * 3600 * 1000

METRICS_RETENTION_MS = DAY_MS
"""Stats snapshots are kept a day: ``status`` and ``squall run`` read the latest per executor."""

COMPACTED = {"cleanup.policy": "compact", "retention.ms": "-1", "retention.bytes": "-1", "segment.ms": "60000", "segment.bytes": str(64 * 2**20)}
"""Topics whose latest value per key is the state: the acker's changelog, the spout ledgers,
the bolts' progress, the coordinator and the control topic. Compaction keeps them bounded by
their keys, but only in rolled segments: the active one, which rolls at 1 GiB or 7 days by
default, is never compacted (a soak grew ``__progress`` by 5 MB/min). So they roll every minute
or 64 MiB too (:data:`ROLLED`)."""


def deleted_after(retention_ms: int) -> dict[str, str]:
    """A delete-policy topic config kept ``retention_ms`` (-1: forever), with no size limit.

    Explicit, because the embedded broker returns an empty DescribeConfigs otherwise (and
    Quix's ``group_by`` then fails).
    """
    return {"cleanup.policy": "delete", "retention.ms": str(retention_ms), "retention.bytes": "-1"}


HOUR_MS = 3_600_000


def kept_for(retention_ms: int) -> dict[str, str]:
    """A topic kept for ``retention_ms`` (inputs, outputs, dead letters, metrics), whose segments roll often enough for the retention to free disk.

    Kafka deletes a segment once its newest record is older than the retention, and never the
    active one, which by default rolls at 7 days: a topic kept 7 days held up to 14 days, and one
    kept 5 minutes kept everything. Segments roll every tenth of the retention, between a minute
    and an hour, so the disk holds the retention plus at most an hour (plus the broker's
    retention check interval). -1 (forever) keeps Kafka's defaults.

    >>> kept_for(7 * DAY_MS)["segment.ms"], kept_for(300_000)["segment.ms"], "segment.ms" in kept_for(-1)
    ('3600000', '60000', False)
    """
    out = deleted_after(retention_ms)
    if retention_ms > 0:
        out["segment.ms"] = str(min(HOUR_MS, max(60_000, retention_ms // 10)))
    return out


ROLLED = {"segment.ms": "60000", "segment.bytes": str(64 * 2**20)}
"""Segments of the purged topics roll every minute or 64 MiB, whichever comes first.

Kafka frees disk a segment at a time, and only a rolled one: a partition's records below its
log start offset (what its consumer purged with DeleteRecords, :mod:`streams.kafka.purge`) stay
on disk while their segment is the active one, which by default rolls at 1 GiB or 7 days. A
soak of the word count on Apache Kafka grew the data dir by 175 MB/min with the purge working.
Rolled every minute, a purged segment goes at the broker's next retention check
(``log.retention.check.interval.ms``: 5 min by default, 30 s on the brokers Squall starts), so
the disk holds the consumer lag plus a few minutes of traffic. The cost: a partition has a
segment (a log, an offset and a time index) per minute of that window, a few dozen small files
instead of one large one."""


@dataclass(frozen=True)
class TopicSpec:
    """A topic Squall creates: its partitions, its config, and whether its consumers purge it.

    ``purged``: the only consumer group of the topic deletes what it committed
    (:mod:`streams.kafka.purge`), so its size follows the consumer lag, not the retention.
    """

    partitions: int
    config: dict[str, str]
    purged: bool = False


def topology_topics(topology: Topology, conf: TopologyConfig) -> dict[str, TopicSpec]:
    """Every topic the topology needs, with its partitions and settings (docs/design.md, "Topics").

    * between components (bolt inputs, ``__acker``, ``__ack_result``): deleted after
      ``squall.topic.retention.ms``, and purged by their consumers after each commit;
    * a KafkaSpout's own source topic: deleted after the retention, never purged (it is the
      input; a replay may read it again);
    * ``__acker.changelog``, ``__ledger``, ``__coordinator``, ``__errors``, ``__progress``, and ``<bolt>.state`` of a
      stateful bolt whose state is ``kafka://``: compacted;
    * ``__metrics`` and ``__trace``: a day; ``__dlq``, outputs and a KafkaBolt's fixed topic: the retention.
    """
    name = topology.name
    keep = kept_for(conf.topic_retention_ms)
    topics: dict[str, TopicSpec] = {}
    for cdef in topology.components.values():
        purged = not cdef.is_spout
        topics[component_topic(name, cdef.id)] = TopicSpec(cdef.input_partitions, {**keep, **ROLLED} if purged else keep, purged=purged)
    ackers = max(conf.ackers, 1)
    topics[acker_topic(name)] = TopicSpec(ackers, {**keep, **ROLLED}, purged=True)
    topics[acker_changelog_topic(name)] = TopicSpec(ackers, COMPACTED)
    topics[ack_result_topic(name)] = TopicSpec(max(topology.spout_tasks, 1), {**keep, **ROLLED}, purged=True)
    topics[metrics_topic(name)] = TopicSpec(1, kept_for(METRICS_RETENTION_MS))
    topics[ledger_topic(name)] = TopicSpec(max(topology.spout_tasks, 1), COMPACTED)
    topics[dead_letter_topic(name)] = TopicSpec(1, keep)
    topics[errors_topic(name)] = TopicSpec(1, COMPACTED)
    topics[progress_topic(name)] = TopicSpec(1, COMPACTED)
    topics[trace_topic(name)] = TopicSpec(1, kept_for(METRICS_RETENTION_MS))
    for out in topology.outputs:
        topics.setdefault(out.topic_for(name), TopicSpec(1, keep))
    for shown in conf.show_streams:
        component, _, stream = shown.partition(":")
        topics.setdefault(show_topic(name, component, stream), TopicSpec(1, keep))
    for cdef in topology.components.values():
        for topic, partitions in cdef.obj.own_topics(name, cdef.id, cdef.num_tasks).items():
            topics.setdefault(topic, TopicSpec(partitions, keep))
    if topology.transactional:
        topics[coordinator_topic(name)] = TopicSpec(1, COMPACTED)
    for cdef in topology.components.values():
        url = resolve(conf.model_dump(by_alias=True, exclude_unset=True), cdef.conf, where=cdef.id).state_url or ""
        if cdef.obj.hold().checkpointed and url.startswith(CHANGELOG_SCHEME):
            topics[state_changelog_topic(name, cdef.id)] = TopicSpec(cdef.num_tasks, COMPACTED)
    return topics


def ensure_topology_topics(bootstrap: str, topology: Topology, conf: TopologyConfig) -> None:
    """Create the topology's missing topics (:func:`topology_topics`). Raises BrokerError (see :func:`ensure_topics`)."""
    specs = topology_topics(topology, conf)
    ensure_topics(
        bootstrap,
        {t: spec.partitions for t, spec in specs.items()},
        configs={t: spec.config for t, spec in specs.items()},
        replication=conf.topic_replication_factor,
    )


def ensure_topics(
    bootstrap: str, topics: dict[str, int], timeout_s: float = 30.0, configs: dict[str, dict[str, str]] | None = None, replication: int = -1
) -> None:
    """Create missing topics; check existing ones have the partitions asked for.

    ``configs[topic]`` is the topic's config (default: deleted after 7 days). ``replication``
    is the replication factor (-1: the broker's ``default.replication.factor``).

    Raises BrokerError naming the topic when a count differs (tasks are fixed at submit), or
    naming the broker when it does not answer; BrokerAccessError naming the broker and what it
    refused (a login, a certificate, the CREATE ACL on a topic).
    """
    admin = new_admin({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        existing = admin.list_topics(timeout=10).topics
    except KafkaException as exc:
        raise why_unreachable(bootstrap, "admin") or BrokerError(f"[admin] broker {bootstrap} is not reachable: {exc}") from exc
    for topic, n in topics.items():
        if topic in existing:
            have = len(existing[topic].partitions)
            if have != n:
                raise BrokerError(f"[admin] topic {topic} has {have} partitions but the topology needs {n} (one per task)")
    default = deleted_after(7 * DAY_MS)
    new = [NewTopic(t, n, replication, config=(configs or {}).get(t, default)) for t, n in topics.items() if t not in existing]
    if new:
        for topic, fut in admin.create_topics(new).items():
            try:
                fut.result()
            except KafkaException as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise denied(exc, "admin", bootstrap, "CREATE", topic) or BrokerError(f"[admin] cannot create topic {topic}: {exc}") from exc
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=10).topics
        if all(t in md and len(md[t].partitions) == n for t, n in topics.items()):
            return
        time.sleep(0.1)
    raise BrokerError(f"[admin] topics not visible after {timeout_s} s: {sorted(topics)}")


def read_topic(bootstrap: str, topic: str, timeout_s: float = 120.0) -> list[dict[str, Any]]:
    """Every JSON record value of ``topic`` (all partitions), read to the fetch high watermarks (:func:`read_records`)."""
    return [json.loads(value) for _, value in read_records(bootstrap, topic, timeout_s) if value is not None]


def read_records(bootstrap: str, topic: str, timeout_s: float = 120.0) -> list[tuple[bytes | None, bytes | None]]:
    """Every record of ``topic`` (all partitions) as ``(key, value)``, read to the fetch high watermarks.

    It returns only once every partition's position is at its high watermark (as a Fetch
    response reports it) and nothing arrived for 0.4 s: a slow first fetch (a busy or just
    resumed broker) never passes for the end. Raises BrokerError naming the topic if the
    end is not reached within ``timeout_s`` seconds.
    """
    c = new_consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"squall.reader.{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
            "log_level": 0,
        }
    )
    try:
        md = c.list_topics(topic, timeout=10).topics[topic]
        parts = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in md.partitions]
        c.assign(parts)
        out: list[tuple[bytes | None, bytes | None]] = []
        quiet = 0.0
        deadline = time.monotonic() + timeout_s
        while True:
            msgs = c.consume(10000, 0.2)
            for m in msgs:
                if not m.error():
                    out.append((m.key(), m.value()))
            quiet = 0.0 if msgs else quiet + 0.2
            if quiet >= 0.4 and at_high_watermarks(c, [TopicPartition(topic, p.partition) for p in parts]):
                return out
            if time.monotonic() > deadline:
                raise BrokerError(f"[reader] {topic} not read to its end within {timeout_s} s ({len(out)} records so far)")
    finally:
        c.close()


def require_topic(bootstrap: str, topic: str, topology: str, timeout_s: float = 10.0) -> None:
    """Raise BrokerError (one line) if no broker answers at ``bootstrap``, UsageError if it has no ``topic`` (the topology never ran there)."""
    admin = new_admin({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        topics = admin.list_topics(timeout=timeout_s).topics
    except KafkaException as exc:
        raise why_unreachable(bootstrap, topology) or BrokerError(f"[{topology}] no Kafka broker answers at {bootstrap} (bootstrap.servers)") from exc
    if topic not in topics:
        raise UsageError(f"[{topology}] no such topology on {bootstrap}: it has no topic {topic}")
