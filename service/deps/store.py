"""Dependency bundles kept in Kafka, chunked, beside the control topic (issue 51).

``<namespace>.__artifacts``: one partition, compacted, kept forever. A bundle of sha256 ``S``
(hex) is its chunks, key ``S/0``, ``S/1``, ... (at most :data:`CHUNK_BYTES` each), then its
head, key ``S``: ``{"sha256", "bytes", "chunks"}`` (JSON), written last, so a bundle whose head
is there is whole. Every supervisor reads a bundle once and checks its sha256
(:func:`service.deps.envs.prepare`). Bundles are written once: the same sha256 is the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from service.brokers.admin import COMPACTED, ensure_topics, read_records
from service.exceptions import BrokerError, DepsError
from streams.kafka.clients import new_producer

CHUNK_BYTES = 512 * 1024
"""The largest chunk: well under Kafka's 1 MiB ``message.max.bytes``."""
KEPT = {**COMPACTED, "max.message.bytes": str(1024 * 1024)}


def artifacts_topic(namespace: str) -> str:
    """``<namespace>.__artifacts``."""
    return f"{namespace}.__artifacts"


def chunks_of(data: bytes, size: int = CHUNK_BYTES) -> list[bytes]:
    """``data`` cut in pieces of at most ``size`` bytes (one empty piece for no bytes).

    >>> [len(c) for c in chunks_of(b"x" * 5, 2)]
    [2, 2, 1]
    """
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


def join_chunks(records: list[tuple[bytes | None, bytes | None]], sha256: str) -> bytes | None:
    """The bundle ``sha256`` from a topic's ``(key, value)`` records (later ones win), or None if its head is not there.

    Raises DepsError when the head is there but a chunk is missing or the bytes do not match.
    """
    last: dict[str, bytes] = {}
    prefix = sha256 + "/"
    for key, value in records:
        if key is None or value is None:
            continue
        k = key.decode("utf-8", "replace")
        if k == sha256 or k.startswith(prefix):
            last[k] = value
    head_raw = last.get(sha256)
    if head_raw is None:
        return None
    head: dict[str, Any] = json.loads(head_raw)
    parts = [last.get(f"{sha256}/{i}") for i in range(int(head["chunks"]))]
    if any(p is None for p in parts):
        raise DepsError(f"dependency bundle {sha256[:12]}: chunks missing from the artifacts topic")
    data = b"".join(p for p in parts if p is not None)
    if len(data) != head["bytes"] or hashlib.sha256(data).hexdigest() != sha256:
        raise DepsError(f"dependency bundle {sha256[:12]}: its chunks do not add up to its sha256")
    return data


class ArtifactStore:
    """Puts and gets bundles on ``<namespace>.__artifacts`` (see the module docstring). Raises BrokerError when the broker does not confirm."""

    def __init__(self, bootstrap: str, namespace: str, overrides: dict[str, Any] | None = None) -> None:
        self.bootstrap = bootstrap
        self.topic = artifacts_topic(namespace)
        self.overrides = dict(overrides or {})

    def ensure(self) -> None:
        """Create the topic if it is missing."""
        ensure_topics(self.bootstrap, {self.topic: 1}, configs={self.topic: KEPT})

    def put(self, sha256: str, data: bytes) -> None:
        """Write the bundle's chunks, then its head; each confirmed."""
        self.ensure()
        producer = new_producer(
            {"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5, "log_level": 0, "message.max.bytes": 1024 * 1024, **self.overrides}
        )
        errors: list[str] = []

        def report(err: Any, _msg: Any) -> None:
            if err:
                errors.append(str(err))

        parts = chunks_of(data)
        for i, part in enumerate(parts):
            producer.produce(self.topic, part, f"{sha256}/{i}".encode(), on_delivery=report)
        if producer.flush(60) or errors:
            raise BrokerError(f"[artifacts] bundle {sha256[:12]} not confirmed by {self.bootstrap}: {errors[0] if errors else 'timed out'}")
        head = json.dumps({"sha256": sha256, "bytes": len(data), "chunks": len(parts)}).encode()
        producer.produce(self.topic, head, sha256.encode(), on_delivery=report)
        if producer.flush(30) or errors:
            raise BrokerError(f"[artifacts] bundle {sha256[:12]} not confirmed by {self.bootstrap}: {errors[0] if errors else 'timed out'}")

    def get(self, sha256: str) -> bytes:
        """The bundle's bytes. Raises DepsError when it is not (whole) in the topic."""
        self.ensure()
        data = join_chunks(read_records(self.bootstrap, self.topic), sha256)
        if data is None:
            raise DepsError(f"dependency bundle {sha256[:12]} is not in {self.topic}")
        return data
