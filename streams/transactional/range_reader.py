"""Reads exact offset ranges of source partitions (a transactional spout's batches).

One assign-only consumer over every source partition. Batches follow each other, so the
consumer is usually where the next range starts and simply reads on; a replay seeks back.
Records fetched beyond a range's end are kept for the next range (:class:`ReadAhead`). High
watermarks come from Fetch responses, which the client's fetcher keeps receiving in the
background (ListOffsets can under-report on the embedded broker).

librdkafka hands over one partition's prefetched records in long runs, so while a read waits
for a partition that lags, another can run far ahead: on three copies of the flights (two
partitions, the embedded broker) one ran ~350,000 records ahead of its range. A partition
whose read-ahead passes ``max_ahead`` records is paused until a read needs it again or its
read-ahead falls below half of that (librdkafka drops what it prefetched for a paused partition
and, on resume, fetches from the record after the last one it handed over), so the reader's
memory is bounded by ``max_ahead`` records a partition (plus one consume call), not by the
backlog.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable
from typing import Any, Protocol

from confluent_kafka import OFFSET_BEGINNING, Message, TopicPartition

from streams.exceptions import FatalError
from streams.kafka.clients import new_consumer
from streams.kafka.fetch_gaps import consume_available
from streams.transactional.coordinator import Range
from streams.wire.naming import TP


class Record(Protocol):
    """What the read-ahead reads of a record (``confluent_kafka.Message``)."""

    def offset(self) -> int | None:
        """The record's offset."""
        ...


def _offset(m: Record) -> int:
    return m.offset() or 0


class ReadAhead:
    """Per partition, the records fetched past the range being read, kept for the next ranges.

    Each partition's records are kept in increasing offset order (a record at or below the
    last kept one is dropped: fetched twice), so :meth:`take` finds a range by bisection
    (O(log n) calls of ``offset()``) and slices it off (the rest is kept by one slice, a copy of
    pointers in C), however far ahead the fetcher ran. It once
    rescanned the whole buffer every batch: librdkafka hands over one partition's prefetched
    records in long runs, so on three copies of the flights a partition ran ~350,000 records
    ahead of its range, and rescanning them took ~17% of the transactional spout's worker (py-spy,
    embedded broker). Pure; not thread-safe.

    Example: records 5..9 fetched; the range [5, 8) takes 5, 6, 7 and keeps 8, 9::

        >>> from streams.kafka.fetch_gaps import FakeRecord as M
        >>> ra = ReadAhead([("t", 0)])
        >>> ra.add(("t", 0), [M("t", 0, o) for o in range(5, 10)])
        >>> [m.offset() for m in ra.take(("t", 0), 5, 8)], ra.size(("t", 0))
        ([5, 6, 7], 2)
    """

    def __init__(self, partitions: Iterable[TP]) -> None:
        self.records: dict[TP, list[Record]] = {tp: [] for tp in partitions}
        self.last: dict[TP, int] = {tp: -1 for tp in self.records}
        """Each partition's highest offset kept (-1: none)."""

    def add(self, tp: TP, records: list[Record]) -> None:
        """Keep ``records`` of partition ``tp`` whose offsets are above every kept one.

        ``records`` come in increasing offset order, as a consumer hands over one partition's
        records between seeks (gaps allowed: transaction markers, compaction). A run of
        consecutive offsets above the kept ones (what a fetch brings) is kept whole, without a
        look at each record; otherwise each record is looked at, and those at or below the
        highest kept (fetched again) are dropped.
        """
        if not records:
            return
        kept = self.records.setdefault(tp, [])
        last = self.last.get(tp, -1)
        lo, hi = _offset(records[0]), _offset(records[-1])
        if last < lo and hi - lo == len(records) - 1:
            kept.extend(records)
            self.last[tp] = hi
            return
        for m in records:
            off = _offset(m)
            if off > last:
                kept.append(m)
                last = off
        self.last[tp] = last

    def take(self, tp: TP, first: int, end: int) -> list[Any]:
        """Remove and return partition ``tp``'s records in ``[first, end)``, in offset order; records below ``first`` are dropped."""
        kept = self.records.get(tp, [])
        lo = bisect_left(kept, first, key=_offset)
        hi = bisect_left(kept, end, lo=lo, key=_offset)
        out = kept[lo:hi]
        self.records[tp] = kept[hi:]
        return out

    def clear(self, tp: TP) -> None:
        """Drop partition ``tp``'s records (its consumer was sought elsewhere)."""
        self.records[tp] = []
        self.last[tp] = -1

    def size(self, tp: TP) -> int:
        """How many records partition ``tp`` has kept."""
        return len(self.records.get(tp, []))


class RangeReader:
    """Args: consumer_config: the consumer's settings (a ``group.id`` is required by the client; nothing is committed through this consumer).

    partitions: the source partitions. component: names errors. max_ahead: the most records a
    partition keeps read ahead before it is paused (see the module docstring). Not thread-safe.

    Attributes:
      pauses: how many times a partition was paused for running ahead.
    """

    def __init__(self, consumer_config: dict[str, Any], partitions: list[TP], component: str, max_ahead: int = 100_000) -> None:
        self.component = component
        self.partitions = list(partitions)
        self.max_ahead = max_ahead
        self.consumer = new_consumer(consumer_config)
        self.consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in self.partitions])
        self.ahead = ReadAhead(self.partitions)
        self.lows: dict[TP, int] = {}
        self.paused: set[TP] = set()
        self.pauses = 0

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
            kept = self.ahead.take(tp, first, end)
            have_from = (kept[0].offset() or 0) if kept else None
            if have_from != first and not (have_from is None and self._position(tp) == first):
                self._resume(tp)  # before the seek: a resume fetches from where the partition paused
                self.consumer.seek(TopicPartition(tp[0], tp[1], first))
                self.ahead.clear(tp)
                kept = []
            out[tp] = kept
            if not kept or (kept[-1].offset() or 0) < end - 1:
                missing[tp] = (first, end)
                self._resume(tp)
        for tp in list(self.paused):
            if self.ahead.size(tp) < self.max_ahead // 2:
                self._resume(tp)
        deadline = time.monotonic() + timeout_s
        last = {tp: (got[-1].offset() or 0) if got else -1 for tp, got in out.items()}
        while missing:
            later: dict[TP, list[Message]] = {}  # this call's records past their range (or of no range), for the read-ahead
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
                    continue
                if r is not None and off >= r[1]:
                    missing.pop(tp, None)  # past the end: the range had gaps (e.g. transaction markers)
                got = later.get(tp)
                if got is None:
                    later[tp] = [msg]
                else:
                    got.append(msg)
            for tp, got in later.items():
                self.ahead.add(tp, got)
                if tp not in missing and tp not in self.paused and self.ahead.size(tp) > self.max_ahead:
                    self.consumer.pause([TopicPartition(tp[0], tp[1])])  # far ahead: fetch the partitions still missing
                    self.paused.add(tp)
                    self.pauses += 1
            if missing and time.monotonic() > deadline:
                where = ", ".join(f"{t}[{p}] {r[0]}..{r[1]}" for (t, p), r in missing.items())
                raise FatalError(f"[{self.component}] could not read {where} within {timeout_s:g} s")
        return out

    def _resume(self, tp: TP) -> None:
        if tp in self.paused:
            self.consumer.resume([TopicPartition(tp[0], tp[1])])
            self.paused.discard(tp)

    def _position(self, tp: TP) -> int | None:
        pos = self.consumer.position([TopicPartition(tp[0], tp[1])])[0].offset
        return None if pos is None or pos < 0 else int(pos)

    def close(self) -> None:
        """Close the reader's consumer."""
        self.consumer.close()
