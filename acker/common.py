"""What both acker runtimes (native and faust) share.

The component id, restoring one acker task's ledger from the changelog, and turning an
outcome into an ack result.

The runtimes only move bytes; the state machine is :mod:`acker.ledger` and the crash-safety
discipline is :mod:`acker.durable`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Message, TopicPartition

from acker.durable import DurableLedger, decode_changelog
from acker.exceptions import RestoreError
from acker.ledger import Ledger, Outcome, Reason
from streams.config import TopologyConfig
from streams.exceptions import DecodeError
from streams.kafka.clients import consumer_config, new_consumer
from streams.monitoring.stats import ExecutorStats
from streams.wire.acker import RESULT_ACK, RESULT_FAIL, RESULT_RESET, why_text
from streams.wire.naming import ACKER_COMPONENT, acker_changelog_topic, component_group

log = logging.getLogger("squall.acker")


PoisonHandler = Callable[[Message, DecodeError], None]
"""Called with a changelog record that cannot be decoded (to dead-letter it)."""


def restore_partition(
    bootstrap: str,
    group: str,
    changelog: str,
    p: int,
    into: DurableLedger,
    conf: TopologyConfig,
    timeout_s: float = 120.0,
    on_poison: PoisonHandler | None = None,
) -> int:
    """Read changelog partition ``p`` from the start to its true end into ``into``.

    The end is the high watermark of a Fetch response (ListOffsets under-reports on the
    embedded broker). Returns the number of records read. A record that cannot be decoded
    is skipped, logged and passed to ``on_poison``. Raises :class:`RestoreError` naming
    the partition if the end is not reached within ``timeout_s`` seconds.
    """
    c = new_consumer(consumer_config(bootstrap, group, conf))
    tp = TopicPartition(changelog, p, OFFSET_BEGINNING)
    c.assign([tp])
    n = empty = 0
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            msgs = c.consume(10000, 0.2)
            for m in msgs:
                if m.error():
                    continue
                try:
                    root, value = decode_changelog(m.key(), m.value(), component=ACKER_COMPONENT, topic=changelog, partition=p, offset=m.offset() or 0)
                except DecodeError as exc:
                    log.warning("%s (skipped)", exc)
                    if on_poison is not None:
                        on_poison(m, exc)
                    continue
                into.restore(root, value)
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


def restored_ledger(
    bootstrap: str,
    topology: str,
    conf: TopologyConfig,
    p: int,
    stats: ExecutorStats,
    on_poison: PoisonHandler | None = None,
    persist_after_s: float = 0.0,
) -> DurableLedger:
    """A new ledger for acker task ``p``, restored from its changelog partition.

    Counted in ``stats`` (``restored_records``, ``restored_trees``; undecodable records:
    ``poison``, and passed to ``on_poison``). Ledger clock: wall time, so start times survive a
    restore. ``persist_after_s``: see :class:`acker.durable.DurableLedger` (0 for a
    runtime that commits its input offsets by itself). Raises :class:`RestoreError`.
    """
    dl = DurableLedger(Ledger(conf.message_timeout_secs, clock=time.time, buckets=conf.acker_buckets), persist_after_s=persist_after_s)
    changelog = acker_changelog_topic(topology)

    def poison(msg: Message, exc: DecodeError) -> None:
        stats.inc("poison")
        if on_poison is not None:
            on_poison(msg, exc)

    n = restore_partition(bootstrap, component_group(topology, f"{ACKER_COMPONENT}.restore"), changelog, p, dl, conf, on_poison=poison)
    stats.inc("restored_records", n)
    if n:
        stats.inc("restored_trees", len(dl))
        log.info("[%s] restored %d pending and %d done trees from %s[%d] (%d records)", ACKER_COMPONENT, len(dl), len(dl.done), changelog, p, n)
    return dl


def publish_ledger_stats(ledgers: dict[int, DurableLedger], stats: ExecutorStats) -> None:
    """Put the acker tasks' state into ``stats`` (both runtimes).

    Gauges ``pending`` (trees), ``tasks``, ``table_bytes`` (bytes of the pending-tree
    tables); counters ``skipped`` (ops not applied: replayed after a crash, or duplicate inits),
    ``duplicate_inits`` (inits written twice, ignored: :meth:`acker.ledger.Ledger.init`) and
    ``changelog_written`` (live changelog records).
    """
    stats.gauges["pending"] = sum(len(dl) for dl in ledgers.values())
    stats.gauges["tasks"] = len(ledgers)
    stats.gauges["table_bytes"] = sum(dl.ledger.nbytes for dl in ledgers.values())
    stats.tasks = sorted(ledgers)
    stats.counters["skipped"] = sum(dl.skipped for dl in ledgers.values())
    stats.counters["duplicate_inits"] = sum(dl.ledger.duplicate_inits for dl in ledgers.values())
    stats.counters["changelog_written"] = sum(dl.written for dl in ledgers.values())


def record_outcomes(outs: list[Outcome], stats: ExecutorStats, results: dict[int, list[list[Any]]]) -> None:
    """Count ``outs`` and queue each one's ack result for its spout task in ``results``.

    ``results`` is ``task -> [[code, root, latency_s], ...]`` (latency in seconds, to the microsecond);
    a failed tree's result says why when its fail op did (``[1, root, latency_s, why]``), and
    so does one the acker itself timed out (``[__acker] timeout``).

    Counters: one per :class:`~acker.ledger.Reason` (``complete``, ``fail``, ``timeout``,
    ``late``); a tree whose init never arrived has nobody to tell: it is counted as
    ``orphaned`` and gets no result. Complete trees' latencies go to the
    ``complete_latency`` histogram. Batched (one call per input record or expiry), since it
    runs once per tree.

    >>> from acker.ledger import Reason
    >>> stats, results = ExecutorStats("__acker", "__acker", "acker", "w1"), {}
    >>> record_outcomes([Outcome(7, 1, True, 0.25, Reason.COMPLETE), Outcome(9, None, False, 3.0, Reason.TIMEOUT)], stats, results)
    >>> results, stats.counters["complete"], stats.counters["orphaned"]
    ({1: [[0, 7, 0.25]]}, 1, 1)
    """
    if not outs:
        return
    latency_hist = stats.hist("complete_latency")
    counts: dict[str, int] = {}
    for out in outs:
        task = out.spout_task
        reason = "orphaned" if task is None else out.reason.value
        counts[reason] = counts.get(reason, 0) + 1
        if task is None:
            continue
        latency = out.latency_s if out.latency_s > 0.0 else 0.0
        if out.acked:
            latency_hist.record(latency)
        queue = results.get(task)
        if queue is None:
            queue = results[task] = []
        if out.acked:
            queue.append([RESULT_ACK, out.root, round(latency, 6)])
        elif out.why or out.reason is not Reason.FAILED:  # the acker's own timeouts and late trees say so
            queue.append([RESULT_FAIL, out.root, round(latency, 6), out.why or why_text(ACKER_COMPONENT, out.reason.value)])
        else:
            queue.append([RESULT_FAIL, out.root, round(latency, 6)])
    for reason, n in counts.items():
        stats.inc(reason, n)


def record_resets(resets: list[tuple[int, int]], results: dict[int, list[list[Any]]]) -> None:
    """Queue a reset result ``[2, root, 0]`` for each ``(root, spout task)``: the spout restarts its own timeout of the tree.

    >>> results = {}
    >>> record_resets([(7, 1)], results)
    >>> results
    {1: [[2, 7, 0.0]]}
    """
    for root, task in resets:
        queue = results.get(task)
        if queue is None:
            queue = results[task] = []
        queue.append([RESULT_RESET, root, 0.0])
