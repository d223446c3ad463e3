"""The kit's task records: one per task of the topology, with its unflushed writes and its read positions."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from streams.config import TopologyConfig
from streams.model.bolt import Bolt
from streams.model.context import TopologyContext
from streams.runtime.acks import AckBuffer
from streams.runtime.collectors import BoltOutputCollectorImpl
from streams.runtime.spout_tasks import SpoutTask

Input = str | bytes | dict[str, Any] | tuple[bytes | str | None, Any]
"""One input record: its value (str is UTF-8 encoded, a dict JSON-encoded), or ``(key, value)``."""


def encode_input(value: Any) -> bytes | None:
    """An input record's key or value as bytes: str UTF-8 encoded, bytes and None as they are, anything else as JSON."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value).encode()


class Outbox:
    """A task's writes since its last flush (a producer's queue): lost if the task crashes."""

    def __init__(self) -> None:
        self.records: list[tuple[str, bytes | None, bytes | None, int, Any]] = []

    def produce(self, topic: str, value: bytes | None, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
        """Queue a record (the runtime's ``produce`` signature); :meth:`LocalTopology._flush` writes it."""
        self.records.append((topic, value, key, partition, headers))


@dataclass(eq=False)
class TaskRun:
    """One task: what every kind has."""

    component: str
    index: int
    task_id: int
    conf: TopologyConfig
    ctx: TopologyContext
    outbox: Outbox
    acks: AckBuffer | None
    life_count: int = 0
    """Tuples executed (bolt) or emit calls (spout) in this life: what a crash rule counts."""


@dataclass(eq=False)
class BoltRun(TaskRun):
    """A bolt task: its copy and collector, and its input positions.

    ``pos`` is the next offset of its partition to execute, ``flushed`` what its last flush
    covered, ``committed`` where a crash restarts it.
    """

    bolt: Bolt | None = None
    collector: BoltOutputCollectorImpl | None = None
    topic: str = ""
    pos: int = 0
    flushed: int = 0
    committed: int = 0
    next_tick: float = float("inf")


@dataclass(eq=False)
class SpoutRun(TaskRun):
    """A spout task; for a Kafka-reading spout, its source partitions, what was fed of each, and the committed offsets."""

    task: SpoutTask | None = None
    partitions: list[tuple[str, int]] = field(default_factory=list)
    fed: dict[tuple[str, int], int] = field(default_factory=dict)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    result_pos: int = 0
