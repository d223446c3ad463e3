"""Topic provisioning for a topology (the only admin calls Squall makes)."""

from __future__ import annotations

import time

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from service.exceptions import BrokerError
from streams.config import TopologyConfig
from streams.naming import (
    ack_result_topic,
    acker_changelog_topic,
    acker_topic,
    component_topic,
    dead_letter_topic,
    metrics_topic,
)
from streams.topology import Topology

# Explicit retention: the embedded broker returns empty DescribeConfigs otherwise.
TOPIC_CONFIG = {"retention.ms": "-1", "retention.bytes": "-1"}


def topology_topics(topology: Topology, conf: TopologyConfig) -> dict[str, int]:
    """Every topic the topology needs, with its partition count."""
    name = topology.name
    topics: dict[str, int] = {}
    for cdef in topology.components.values():
        topics[component_topic(name, cdef.id)] = cdef.num_tasks
    ackers = max(conf.ackers, 1)
    topics[acker_topic(name)] = ackers
    topics[acker_changelog_topic(name)] = ackers
    topics[ack_result_topic(name)] = max(topology.spout_tasks, 1)
    topics[metrics_topic(name)] = 1
    topics[dead_letter_topic(name)] = 1
    for out in topology.outputs:
        topics.setdefault(out.topic_for(name), 1)
    return topics


def ensure_topics(bootstrap: str, topics: dict[str, int], timeout_s: float = 30.0, configs: dict[str, dict[str, str]] | None = None) -> None:
    """Create missing topics (``configs[topic]`` replaces the default topic config); check
    existing ones have the partitions asked for.

    Raises BrokerError naming the topic when a count differs (tasks are fixed at submit),
    or naming the broker when it does not answer.
    """
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        existing = admin.list_topics(timeout=10).topics
    except KafkaException as exc:
        raise BrokerError(f"[admin] broker {bootstrap} is not reachable: {exc}") from exc
    for topic, n in topics.items():
        if topic in existing:
            have = len(existing[topic].partitions)
            if have != n:
                raise BrokerError(f"[admin] topic {topic} has {have} partitions but the topology needs {n} (one per task)")
    new = [NewTopic(t, n, 1, config=(configs or {}).get(t, TOPIC_CONFIG)) for t, n in topics.items() if t not in existing]
    if new:
        for topic, fut in admin.create_topics(new).items():
            try:
                fut.result()
            except KafkaException as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise BrokerError(f"[admin] cannot create topic {topic}: {exc}") from exc
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=10).topics
        if all(t in md and len(md[t].partitions) == n for t, n in topics.items()):
            return
        time.sleep(0.1)
    raise BrokerError(f"[admin] topics not visible after {timeout_s} s: {sorted(topics)}")
