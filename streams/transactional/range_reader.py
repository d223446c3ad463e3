"""Reads exact offset ranges of source partitions (a transactional spout's batches).

One assign-only consumer over every source partition. Batches follow each other, so the
consumer is usually where the next range starts and simply reads on; a replay seeks back.
Records fetched beyond a range's end are kept for the next range. High watermarks come
from Fetch responses, which the client's fetcher keeps receiving in the background
(ListOffsets can under-report on the embedded broker).
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Message, TopicPartition

from streams.exceptions import FatalError
from streams.kafka.clients import new_consumer
from streams.kafka.fetch_gaps import consume_available
from streams.transactional.coordinator import Range
from streams.wire.naming import TP


class RangeReader:
    """Args: consumer_config: the consumer's settings (a ``group.id`` is required by the client; nothing is committed through this consumer).

    partitions: the source partitions. component: names errors. Not thread-safe.
    """

    def __init__(self, consumer_config: dict[str, Any], partitions: list[TP], component: str) -> None:
        self.component = component
        self.partitions = list(partitions)
        self.consumer = new_consumer(consumer_config)
        self.consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in self.partitions])
        self.ahead: dict[TP, list[Message]] = {tp: [] for tp in self.partitions}
        self.lows: dict[TP, int] = {}

    def highs(self) -> dict[TP, int]:
        """Each partition's high watermark as last seen in a Fetch response (partitions not fetched yet are absent)."""
        out: dict[TP, int] = {}
        for t, p in self.partitions:
            low, high = self.consumer.get_watermark_offsets(TopicPartition(t, p), cached=True)
            if high is not None and high >= 0:
                out[(t, p)] = high
                if low is not None and low >= 0:
                    self.lows[(t, p)] = low
        return out

    def starts(self) -> dict[TP, int]:
        """Where a partition never batched before starts: its low watermark (else 0)."""
        return {tp: self.lows.get(tp, 0) for tp in self.partitions}

    def read(self, ranges: dict[TP, Range], timeout_s: float = 60.0) -> dict[TP, list[Message]]:
        """The records of each ``[first, end)`` range, in offset order.

        Raises FatalError naming the partition if a range cannot be read within
        ``timeout_s``.
        """
        out: dict[TP, list[Message]] = {}
        missing: dict[TP, Range] = {}
        for tp, (first, end) in ranges.items():
            ahead = self.ahead.get(tp, [])
            offsets = [m.offset() or 0 for m in ahead]  # once per record: the spout's thread reads every record here
            kept = [m for m, o in zip(ahead, offsets, strict=True) if first <= o < end]
            later = [m for m, o in zip(ahead, offsets, strict=True) if o >= end]
            have_from = (kept[0].offset() or 0) if kept else None
            if have_from != first and not (have_from is None and self._position(tp) == first):
                self.consumer.seek(TopicPartition(tp[0], tp[1], first))
                kept, later = [], []
            out[tp] = kept
            self.ahead[tp] = later
            if not kept or (kept[-1].offset() or 0) < end - 1:
                missing[tp] = (first, end)
        deadline = time.monotonic() + timeout_s
        last = {tp: (got[-1].offset() or 0) if got else -1 for tp, got in out.items()}
        while missing:
            for msg in consume_available(self.consumer, 1000, 0.05):  # not consume(): it waited out 50 ms whenever < 1000 were queued
                if msg.error():
                    continue
                tp = (msg.topic() or "", msg.partition() or 0)
                off = msg.offset() or 0
                r = ranges.get(tp)
                if r is not None and r[0] <= off < r[1]:
                    if last[tp] < off:  # not a record fetched twice
                        out[tp].append(msg)
                        last[tp] = off
                    if off >= r[1] - 1:
                        missing.pop(tp, None)
                elif r is not None and off >= r[1]:
                    self.ahead.setdefault(tp, []).append(msg)
                    missing.pop(tp, None)  # past the end: the range had gaps (e.g. transaction markers)
                else:
                    self.ahead.setdefault(tp, []).append(msg)
            if missing and time.monotonic() > deadline:
                where = ", ".join(f"{t}[{p}] {r[0]}..{r[1]}" for (t, p), r in missing.items())
                raise FatalError(f"[{self.component}] could not read {where} within {timeout_s:g} s")
        return out

    def _position(self, tp: TP) -> int | None:
        pos = self.consumer.position([TopicPartition(tp[0], tp[1])])[0].offset
        return None if pos is None or pos < 0 else int(pos)

    def close(self) -> None:
        """Close the reader's consumer."""
        self.consumer.close()
