"""What both acker runtimes (native and faust) share: the component id, restoring one
acker task's ledger from the changelog, and turning an outcome into an ack result.

The runtimes only move bytes; the state machine is :mod:`acker.ledger` and the crash-safety
discipline is :mod:`acker.durable`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from acker.durable import DurableLedger
from acker.exceptions import RestoreError
from acker.ledger import Ledger, Outcome
from streams.acker_wire import RESULT_ACK, RESULT_FAIL, decode_list
from streams.config import TopologyConfig
from streams.kafka_io import consumer_config
from streams.naming import acker_changelog_topic, component_group
from streams.stats import ExecutorStats

log = logging.getLogger("squall.acker")

ACKER_COMPONENT = "__acker"
"""The acker's component id (Storm's ``Acker.ACKER_COMPONENT_ID``)."""


def restore_partition(bootstrap: str, group: str, changelog: str, p: int, into: DurableLedger, conf: TopologyConfig, timeout_s: float = 120.0) -> int:
    """Read changelog partition ``p`` from the start to its true end into ``into``.

    The end is the high watermark of a Fetch response (ListOffsets under-reports on the
    embedded broker). Returns the number of records read. Raises :class:`RestoreError`
    naming the partition if the end is not reached within ``timeout_s`` seconds.
    """
    c = Consumer(consumer_config(bootstrap, group, conf))
    tp = TopicPartition(changelog, p, OFFSET_BEGINNING)
    c.assign([tp])
    n = empty = 0
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            msgs = c.consume(10000, 0.2)
            for m in msgs:
                key = m.key()
                if m.error() or key is None:
                    continue
                raw = m.value()
                value = None if raw is None else decode_list(raw, component=ACKER_COMPONENT, topic=changelog, partition=p, offset=m.offset() or 0)
                into.restore(int.from_bytes(key, "big"), value)
                n += 1
            if msgs:
                empty = 0
                continue
            empty += 1
            _, high = c.get_watermark_offsets(TopicPartition(changelog, p), cached=True)
            pos = c.position([TopicPartition(changelog, p)])[0].offset
            # The high watermark is known only once a Fetch response arrived (-1001 before).
            known = high is not None and high >= 0
            if empty >= 2 and known and (high == 0 or (pos is not None and pos >= high)):
                return n
            if time.monotonic() > deadline:
                raise RestoreError(f"[{ACKER_COMPONENT}] restore of {changelog}[{p}] stopped at {pos} before the end {high}")
    finally:
        c.close()


def restored_ledger(bootstrap: str, topology: str, conf: TopologyConfig, p: int, stats: ExecutorStats) -> DurableLedger:
    """A new ledger for acker task ``p``, restored from its changelog partition, counted
    in ``stats`` (``restored_records``, ``restored_trees``). Ledger clock: wall time, so
    start times survive a restore. Raises :class:`RestoreError`."""
    dl = DurableLedger(Ledger(conf.message_timeout_secs, clock=time.time, buckets=conf.acker_buckets))
    changelog = acker_changelog_topic(topology)
    n = restore_partition(bootstrap, component_group(topology, "__acker.restore"), changelog, p, dl, conf)
    stats.inc("restored_records", n)
    if n:
        stats.inc("restored_trees", len(dl))
        log.info("[%s] restored %d pending and %d done trees from %s[%d] (%d records)", ACKER_COMPONENT, len(dl), len(dl.done), changelog, p, n)
    return dl


def record_outcome(out: Outcome, stats: ExecutorStats, results: dict[int, list[list[Any]]]) -> None:
    """Count ``out`` and queue its ack result for its spout task in ``results``
    (``task -> [[code, root, latency_s], ...]``). A tree whose init never arrived has
    nobody to tell: it is counted as ``orphaned``."""
    if out.spout_task is None:
        stats.inc("orphaned")
        return
    stats.inc(out.reason.value)
    latency = max(out.latency_s, 0.0)
    if out.acked:
        stats.hist("complete_latency").record(latency)
    results.setdefault(out.spout_task, []).append([RESULT_ACK if out.acked else RESULT_FAIL, out.root, round(latency, 6)])
