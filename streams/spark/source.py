"""``spark.readStream.format("squall-kafka")``: a Kafka source for PySpark over confluent-kafka.

Built on PySpark's Python Data Source API (``pyspark.sql.datasource``, Spark >= 4.2).
Offsets are ``{topic: {"partition": next_offset}}`` (string keys, as Spark's JSON offset
log requires); the Spark checkpoint is the source of truth for them. Partitions are read
with ``assign()`` (never a consumer group), so a restarted query reads exactly the
ranges its checkpoint names: no loss and, with a sink that commits per batch, no
duplicates.

Row schema (:data:`SCHEMA`): ``key binary, value binary, topic string, partition int,
offset long, timestamp_ms long`` (the record's timestamp, milliseconds since the epoch).

End offsets come from Fetch responses' high watermarks, never ListOffsets(LATEST), which
can sit below the true end on the embedded broker (see :class:`EndOffsets`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from typing_extensions import override

from streams.kafka.clients import new_consumer
from streams.spark import clients
from streams.spark import options as opt
from streams.spark.exceptions import SparkSourceError

log = logging.getLogger("squall.spark.source")

ARROW_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp_ms", pa.int64()),
    ]
)
ROWS_PER_BATCH = 2048

Offsets = dict[str, dict[str, int]]
Range = tuple[str, int, int, int]  # topic, partition, from (inclusive), until (exclusive)


# -- pure planning ---------------------------------------------------------------------
def cap_ranges(start: Offsets, end: Offsets, max_rows: int) -> Offsets:
    """Shrink ``end`` so that at most ``max_rows`` records lie between ``start`` and it.

    Each partition gets a share proportional to its backlog (Spark's Kafka source rule);
    at least one record overall moves forward when anything is available.
    """
    avail = {(t, p): e - start.get(t, {}).get(p, 0) for t, parts in end.items() for p, e in parts.items()}
    total = sum(v for v in avail.values() if v > 0)
    if total <= max_rows:
        return end
    out: Offsets = {t: dict(parts) for t, parts in start.items()}
    granted = 0
    for (t, p), n in sorted(avail.items()):
        take = max(0, n) * max_rows // total
        out.setdefault(t, {})[p] = start.get(t, {}).get(p, 0) + take
        granted += take
    if granted == 0:
        (t, p), n = max(avail.items(), key=lambda kv: kv[1])
        out[t][p] = start.get(t, {}).get(p, 0) + min(n, max_rows)
    return out


def plan_ranges(start: Offsets, end: Offsets, tasks: int) -> list[list[Range]]:
    """Group the non-empty ranges into at most ``tasks`` lists of similar size (LPT)."""
    ranges = [
        (t, int(p), start.get(t, {}).get(p, 0), e) for t, parts in sorted(end.items()) for p, e in sorted(parts.items()) if e > start.get(t, {}).get(p, 0)
    ]
    if not ranges:
        return []
    n = min(tasks, len(ranges))
    bins: list[list[Range]] = [[] for _ in range(n)]
    load = [0] * n
    for r in sorted(ranges, key=lambda r: r[2] - r[3]):  # biggest first
        i = load.index(min(load))
        bins[i].append(r)
        load[i] += r[3] - r[2]
    return bins


# -- Kafka edges -----------------------------------------------------------------------
class EndOffsets:
    """High watermarks of a set of partitions, kept current by a background fetcher.

    One assign-only consumer sits at the end of every partition; librdkafka fetches in
    the background and each Fetch response carries the true high watermark. Records it
    fetches are dropped (they are read again, by range, in :func:`read_ranges`).
    """

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.consumer = new_consumer({"group.id": "squall.__spark.ends", "enable.auto.commit": False, "log_level": 3, **conf})
        self.assigned: set[tuple[str, int]] = set()

    def ends(self, tps: list[tuple[str, int]], timeout_s: float = 10.0) -> dict[tuple[str, int], int]:
        """``(topic, partition) -> high watermark``. Raises TimeoutError naming the partitions."""
        new = [tp for tp in tps if tp not in self.assigned]
        if new:
            self.consumer.incremental_assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in new])
            self.assigned.update(new)
        deadline = time.monotonic() + timeout_s
        out: dict[tuple[str, int], int] = {}
        while True:
            while self.consumer.consume(100_000, 0):
                pass  # drain what the background fetcher queued; keeps responses coming
            for t, p in tps:
                high = self.consumer.get_watermark_offsets(TopicPartition(t, p), cached=True)[1]
                if high is not None and high >= 0:
                    out[(t, p)] = high
            if len(out) == len(tps):
                return out
            if time.monotonic() > deadline:
                raise TimeoutError(f"no high watermark for {sorted(set(tps) - set(out))} after {timeout_s} s")
            self.consumer.consume(1, 0.05)

    def close(self) -> None:
        """Close the reader's consumers."""
        self.consumer.close()


def read_ranges(conf: Mapping[str, Any], ranges: Sequence[Range], timeout_s: float) -> Iterator[pa.RecordBatch]:
    """Read every ``[from, until)`` range exactly, as Arrow batches of :data:`ARROW_SCHEMA`.

    Stops a partition once its position passes ``until`` (so gaps such as transaction
    markers do not stall it). Raises :class:`SparkSourceError` naming the topic, partition
    and offsets if a range cannot be read within ``timeout_s`` seconds.
    """
    consumer = clients.consumer(conf)
    todo = {(t, p): (lo, hi) for t, p, lo, hi in ranges if hi > lo}
    if not todo:
        return
    consumer.assign([TopicPartition(t, p, lo) for (t, p), (lo, _) in todo.items()])
    cols: dict[str, list[Any]] = {name: [] for name in ARROW_SCHEMA.names}
    deadline = time.monotonic() + timeout_s
    remaining = sum(hi - lo for lo, hi in todo.values())
    try:
        while todo:
            msgs = consumer.consume(max(1, min(remaining, 10_000)), 0.5)
            for m in msgs:
                if m.error():
                    continue
                tp = (m.topic() or "", m.partition() or 0)
                span = todo.get(tp)
                off = m.offset() or 0
                if span is None or off >= span[1] or off < span[0]:
                    continue
                cols["key"].append(m.key())
                cols["value"].append(m.value())
                cols["topic"].append(tp[0])
                cols["partition"].append(tp[1])
                cols["offset"].append(off)
                cols["timestamp_ms"].append(m.timestamp()[1])
                remaining -= 1
                if off + 1 >= span[1]:
                    del todo[tp]
            for tp in [tp for tp in todo if consumer.position([TopicPartition(*tp)])[0].offset >= todo[tp][1]]:
                del todo[tp]
            if len(cols["offset"]) >= ROWS_PER_BATCH or (not todo and cols["offset"]):
                yield pa.RecordBatch.from_pydict(cols, schema=ARROW_SCHEMA)
                cols = {name: [] for name in ARROW_SCHEMA.names}
            if todo and time.monotonic() > deadline:
                missing = ", ".join(f"{t}[{p}] offsets {lo}..{hi}" for (t, p), (lo, hi) in todo.items())
                raise SparkSourceError(f"[squall-kafka] could not read {missing} within {timeout_s} s")
    finally:
        consumer.unassign()


# -- the Spark reader ------------------------------------------------------------------
class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Spark's side of the source (see the module doc).

    Pickled to executors: the Kafka clients are created lazily and dropped in
    ``__getstate__``.
    """

    def __init__(self, options: Mapping[str, str]) -> None:
        where = "squall-kafka"
        self.options = dict(options)
        self.topics = opt.topics(options, where)
        self.consumer_conf = opt.kafka_settings(options, opt.SOURCE_DEFAULTS, where)
        self.starting = (opt.text(options, "startingOffsets", "earliest") or "earliest").lower()
        if self.starting not in ("earliest", "latest"):
            raise SparkSourceError(f"[{where}] startingOffsets must be earliest or latest, not {self.starting!r}")
        limit = opt.number(options, "maxOffsetsPerTrigger", None, where)
        self.max_rows = int(limit) if limit else None
        self.tasks = opt.max_tasks(options, where)
        self.group = opt.text(options, "groupId")
        self.read_timeout_s = opt.number(options, "readTimeoutSecs", 60.0, where) or 60.0
        self.target: Offsets | None = None
        self._ends: EndOffsets | None = None
        self._meta: Consumer | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_ends"] = None
        state["_meta"] = None
        return state

    # driver side
    def _partitions(self) -> list[tuple[str, int]]:
        if self._meta is None:
            self._meta = new_consumer({"bootstrap.servers": self.consumer_conf["bootstrap.servers"], "group.id": "squall.__spark.meta", "log_level": 3})
        md = self._meta.list_topics(timeout=10)
        out = []
        for t in self.topics:
            meta = md.topics.get(t)
            if meta is None or meta.error is not None:
                log.warning("[squall-kafka] topic %s is not available yet", t)
                continue
            out += [(t, p) for p in sorted(meta.partitions)]
        return out

    def _latest(self) -> Offsets:
        if self._ends is None:
            self._ends = EndOffsets(self.consumer_conf)
        ends = self._ends.ends(self._partitions())
        out: Offsets = {t: {} for t in self.topics}
        for (t, p), e in ends.items():
            out[t][str(p)] = e
        return out

    @override
    def initialOffset(self) -> dict[str, Any]:
        if self.starting == "latest":
            return self._latest()
        return {t: {str(p): 0 for tt, p in self._partitions() if tt == t} for t in self.topics}

    @override
    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_rows) if self.max_rows else ReadAllAvailable()

    @override
    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        latest = self._latest()
        # partitions that appeared since ``start`` begin at 0
        start = {t: {**dict.fromkeys(latest.get(t, {}), 0), **start.get(t, {})} for t in set(start) | set(latest)}
        end = {t: {p: max(e, start[t].get(p, 0)) for p, e in parts.items()} for t, parts in latest.items()}
        if self.target is not None:
            end = {t: {p: min(e, self.target.get(t, {}).get(p, e)) for p, e in parts.items()} for t, parts in end.items()}
        if isinstance(limit, ReadMaxRows):
            end = cap_ranges(start, end, limit.max_rows)
        return end

    @override
    def reportLatestOffset(self) -> dict[str, Any] | None:
        return self._latest()

    @override
    def prepareForTriggerAvailableNow(self) -> None:
        self.target = self._latest()

    @override
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return [InputPartition(ranges) for ranges in plan_ranges(start, end, self.tasks)]

    @override
    def commit(self, end: dict[str, Any]) -> None:
        if not self.group:
            return
        c = clients.consumer({**self.consumer_conf, "group.id": self.group})
        try:
            c.commit(offsets=[TopicPartition(t, int(p), e) for t, parts in end.items() for p, e in parts.items()], asynchronous=False)
        except Exception as exc:  # lag dashboards only: never fail the query for it
            log.warning("[squall-kafka] committing %s to group %s failed: %s", end, self.group, exc)

    @override
    def stop(self) -> None:
        if self._ends is not None:
            self._ends.close()
            self._ends = None

    # executor side
    @override
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        ranges: list[Range] = [tuple(r) for r in partition.value]
        yield from read_ranges(self.consumer_conf, ranges, self.read_timeout_s)
