"""What a supervisor's Storm UI API (:mod:`service.supervisor.storm_api`) reads from Kafka: topologies, status, errors, offsets, the supervisors' group."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from confluent_kafka import ConsumerGroupState, KafkaException, TopicPartition

from service.control.client import Client
from service.control.log import SLOTS
from service.control.slots import slot_of
from service.exceptions import UsageError
from service.query.errors import read_errors
from service.query.status import list_topologies, status
from service.supervisor.storm_api import StormApi
from streams.kafka.clients import new_admin, new_consumer
from streams.wire.naming import component_group


def squall_version() -> str:
    """``squall <version>`` (what ``stormVersion`` says)."""
    try:
        return f"squall {version('squall')}"
    except PackageNotFoundError:
        return "squall"


def storm_api(client: Client, clock: Any = time.time) -> StormApi:
    """A :class:`StormApi` reading through ``client`` (one request at a time: the control-topic reads are not shared)."""
    lock = threading.Lock()

    def rows() -> list[dict[str, Any]]:
        with lock:
            return list_topologies(client, clock())

    def topology_status(name: str) -> dict[str, Any]:
        with lock:
            return status(client, name, clock())

    def errors(name: str) -> list[dict[str, Any]]:
        try:
            return [asdict(r) for r in read_errors(client.bootstrap, name)]
        except UsageError:
            return []

    def committed(name: str, spout: str, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        if not tps:
            return {}
        c = new_consumer({"bootstrap.servers": client.bootstrap, "group.id": component_group(name, spout), "enable.auto.commit": False, "log_level": 0})
        try:
            got = c.committed([TopicPartition(t, p) for t, p in tps], timeout=10)
            return {(tp.topic, tp.partition): tp.offset for tp in got if tp.error is None}
        except KafkaException:
            return {}
        finally:
            c.close()

    def cluster() -> tuple[int, int, int]:
        admin = new_admin({"bootstrap.servers": client.bootstrap, "log_level": 0})
        supervisors = 0
        try:
            (future,) = admin.describe_consumer_groups([client.names.group]).values()
            group = future.result(timeout=10)
            supervisors = len(group.members) if group.state != ConsumerGroupState.DEAD else 0
        except KafkaException:
            pass
        used = {slot_of(r["name"], w) for r in rows() for w in range(r["workers"])}
        return max(1, supervisors), SLOTS, len(used)  # this supervisor answers (the embedded broker may not describe the group)

    return StormApi(rows, topology_status, errors, committed, cluster, squall_version(), clock)
