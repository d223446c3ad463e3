"""The kit's :class:`~streams.transactional.batch_source.BatchSource`: a transactional spout's batches from the in-memory log.

Where it differs from Kafka's: the coordinator's state is kept in a dict the run owns (it
survives a crashed spout task, as the coordinator topic does); a partition starts at offset 0
(nothing is purged); group commits are only recorded.
"""

from __future__ import annotations

import json
from typing import Any

from streams.testing.memlog import MemoryLog, Record
from streams.transactional.coordinator import CoordinatorState, Range
from streams.wire.naming import TP


class MemoryBatchSource:
    """Batches of ``topics`` (``partitions`` each) read from ``log``; the coordinator's state in ``saved``.

    ``saved`` is the run's dict for this spout: ``{"state": snapshot, "group": {tp: offset}}``.
    """

    def __init__(self, log: MemoryLog, topics: list[str], partitions: int, saved: dict[str, Any]) -> None:
        self.log = log
        self.partitions: list[TP] = [(t, p) for t in topics for p in range(partitions)]
        self.saved = saved

    def load(self) -> CoordinatorState:
        """The last saved state (fresh at the first start)."""
        snapshot = self.saved.get("state")
        return CoordinatorState() if snapshot is None else CoordinatorState.from_json(snapshot)

    def save(self, snapshot: dict[str, Any]) -> None:
        """Keep a copy, as JSON round-trips it on the coordinator topic."""
        self.saved["state"] = json.loads(json.dumps(snapshot))

    def highs(self) -> dict[TP, int]:
        """Every partition's end."""
        return {tp: self.log.end(*tp) for tp in self.partitions}

    def starts(self) -> dict[TP, int]:
        """0: the in-memory log keeps every record."""
        return dict.fromkeys(self.partitions, 0)

    def read(self, ranges: dict[TP, Range]) -> dict[TP, list[Any]]:
        """The records of each ``[first, end)`` range."""
        out: dict[TP, list[Record]] = {}
        for tp, (first, end) in ranges.items():
            out[tp] = list(self.log.partition(*tp)[first:end])
        return dict(out)

    def commit_group(self, offsets: dict[TP, int]) -> None:
        """Record the committed ends."""
        self.saved.setdefault("group", {}).update(offsets)

    def close(self) -> None:
        """Nothing to release."""
