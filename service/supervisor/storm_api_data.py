"""What a supervisor's Storm UI API (:mod:`service.supervisor.storm_api`) reads from Kafka: topologies, status, errors, offsets, the supervisors' group."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaException, TopicPartition

from service.control.client import Client
from service.control.log import SLOTS
from service.control.slots import slot_of
from service.query.live import LiveStatus
from service.supervisor.storm_api import StormApi
from streams.kafka.clients import new_admin
from streams.wire.naming import component_group


def squall_version() -> str:
    """``squall <version>`` (what ``stormVersion`` says)."""
    try:
        return f"squall {version('squall')}"
    except PackageNotFoundError:
        return "squall"


def storm_api(client: Client, clock: Any = time.time, live: LiveStatus | None = None) -> StormApi:
    """A :class:`StormApi` reading through ``client``: status, rows and error reports from tails kept open.

    ``live``: those tails (default: a new :class:`~service.query.live.LiveStatus`).
    """
    live = live if live is not None else LiveStatus(client, clock)

    def errors(name: str) -> list[dict[str, Any]]:
        return [asdict(r) for r in live.error_reports(name)]

    admin_lock = threading.Lock()
    admins: list[Any] = []

    def admin() -> Any:
        """One admin client for the process (a new one per request cost about 90 ms of every answer)."""
        with admin_lock:
            if not admins:
                admins.append(new_admin({"bootstrap.servers": client.bootstrap, "log_level": 0}))
            return admins[0]

    def committed(name: str, spout: str, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        if not tps:
            return {}
        request = ConsumerGroupTopicPartitions(component_group(name, spout), [TopicPartition(t, p) for t, p in tps])
        try:
            (future,) = admin().list_consumer_group_offsets([request]).values()
            got = future.result(timeout=10).topic_partitions or []
            return {(tp.topic, tp.partition): tp.offset for tp in got if tp.error is None}
        except KafkaException:
            return {}

    def cluster() -> tuple[int, int, int]:
        supervisors = 0
        try:
            (future,) = admin().describe_consumer_groups([client.names.group]).values()
            group = future.result(timeout=10)
            supervisors = len(group.members) if group.state != ConsumerGroupState.DEAD else 0
        except KafkaException:
            pass
        used = {slot_of(r["name"], w) for r in live.rows() for w in range(r["workers"])}
        return max(1, supervisors), SLOTS, len(used)  # this supervisor answers (the embedded broker may not describe the group)

    return StormApi(live.rows, live.status, errors, committed, cluster, squall_version(), clock, ttl_s=0.5)
