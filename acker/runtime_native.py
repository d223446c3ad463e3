"""The native acker runtime: a confluent-kafka batch loop over :class:`acker.ledger.Ledger`.

One ledger per assigned ``__acker`` partition (acker task). Per batch: apply ops; per
flush (``squall.flush.interval.secs``): write the changelog (final state per touched root;
a tombstone for a finished root that was persisted), flush, send ack results (one record
per spout task), flush, then commit the input offsets. On assignment the table is
restored from ``squall.T.__acker.changelog`` read to its true end (the high watermark
of a Fetch response, not ListOffsets, which the embedded broker under-reports).

Ledger clock: wall time (``time.time``), so start times survive a restore.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Message, TopicPartition

from acker.exceptions import RestoreError
from acker.ledger import Ledger, Outcome
from acker.partition import root_key
from acker.wire import OP_ACK, OP_FAIL, OP_INIT, OP_RESET, RESULT_ACK, RESULT_FAIL, decode_list, encode_entry, encode_results
from streams.exceptions import DecodeError
from streams.executor import Executor
from streams.kafka_io import consumer_config
from streams.naming import ack_result_topic, acker_changelog_topic, acker_topic, component_group

log = logging.getLogger("squall.acker")

ACKER_COMPONENT = "__acker"


class AckerExecutor(Executor):
    """Runs acker tasks (partitions of ``squall.T.__acker``) with the native runtime."""

    kind = "acker"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        name = self.topology.name
        self.topic = acker_topic(name)
        self.changelog = acker_changelog_topic(name)
        self.result_topic = ack_result_topic(name)
        self.ledgers: dict[int, Ledger] = {}
        self.persisted: dict[int, set[int]] = {}
        self.dirty: dict[int, set[int]] = {}
        self.next_offset: dict[int, int] = {}
        self.results: dict[int, list[list[Any]]] = {}
        self.clock = time.time

    # -- assignment ------------------------------------------------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            p = tp.partition
            ledger = Ledger(self.conf.message_timeout_secs, clock=self.clock, buckets=self.conf.acker_buckets)
            self.persisted[p] = self._restore(p, ledger)
            self.ledgers[p] = ledger
            self.dirty[p] = set()
        log.info("[%s] %s assigned acker tasks %s", ACKER_COMPONENT, self.worker, sorted(self.ledgers))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._flush(consumer)
        for tp in partitions:
            for d in (self.ledgers, self.persisted, self.dirty, self.next_offset):
                d.pop(tp.partition, None)

    def _restore(self, p: int, ledger: Ledger) -> set[int]:
        """Rebuild partition ``p``'s table from the changelog; returns the persisted roots."""
        c = Consumer(consumer_config(self.bootstrap, component_group(self.topology.name, "__acker.restore"), self.conf, self.kafka.get("consumer")))
        tp = TopicPartition(self.changelog, p, OFFSET_BEGINNING)
        c.assign([tp])
        persisted: set[int] = set()
        restored = empty_rounds = 0
        deadline = time.monotonic() + 120
        try:
            while True:
                msgs = c.consume(5000, 0.2)
                for m in msgs:
                    if m.error():
                        continue
                    key = m.key()
                    if key is None:
                        continue
                    root = int.from_bytes(key, "big")
                    value = m.value()
                    if value is None:
                        ledger.forget(root)
                        persisted.discard(root)
                    else:
                        val, task, start = decode_list(value, component=ACKER_COMPONENT, topic=self.changelog, partition=p, offset=m.offset() or 0)
                        ledger.restore(root, val, task, start)
                        persisted.add(root)
                    restored += 1
                if msgs:
                    empty_rounds = 0
                    continue
                empty_rounds += 1
                _, high = c.get_watermark_offsets(TopicPartition(self.changelog, p), cached=True)
                pos = c.position([TopicPartition(self.changelog, p)])[0].offset
                caught_up = (high is None or high <= 0) or (pos is not None and pos >= high)
                if empty_rounds >= 2 and caught_up:
                    break
                if time.monotonic() > deadline:
                    raise RestoreError(f"[{ACKER_COMPONENT}] restore of {self.changelog}[{p}] did not reach the end (at {pos}, end {high})")
        finally:
            c.close()
        if restored:
            log.info("[%s] restored %d pending trees from %s[%d] (%d records)", ACKER_COMPONENT, len(persisted), self.changelog, p, restored)
        return persisted

    # -- processing ------------------------------------------------------------------
    def _apply(self, msg: Message) -> None:
        if msg.error():
            log.warning("[%s] consumer error: %s", ACKER_COMPONENT, msg.error())
            return
        p = msg.partition() or 0
        off = msg.offset() or 0
        ledger = self.ledgers.get(p)
        if ledger is None:
            return
        try:
            ops = decode_list(msg.value(), component=ACKER_COMPONENT, topic=self.topic, partition=p, offset=off)
        except DecodeError as exc:
            self.stats.inc("poison")
            self.dead_letter(msg, str(exc), 0)
            self.next_offset[p] = off + 1
            return
        dirty = self.dirty[p]
        counters = self.stats.counters
        counters["ops"] = counters.get("ops", 0) + len(ops)
        for op in ops:
            code = op[0]
            root = op[1]
            if code == OP_ACK:
                out = ledger.ack(root, op[2])
            elif code == OP_INIT:
                out = ledger.init(root, op[2], op[3])
            elif code == OP_FAIL:
                out = ledger.fail(root)
            elif code == OP_RESET:
                ledger.reset_timeout(root)
                out = None
            else:
                self.stats.inc("unknown_ops")
                continue
            dirty.add(root)
            if out is not None:
                self._outcome(out)
        self.next_offset[p] = off + 1

    def _outcome(self, out: Outcome) -> None:
        if out.spout_task is None:
            self.stats.inc("orphaned")  # never initialised: nobody to tell
            return
        self.stats.inc(out.reason)
        if out.acked:
            self.stats.hist("complete_latency").record(max(out.latency_s, 0.0))
        self.results.setdefault(out.spout_task, []).append([RESULT_ACK if out.acked else RESULT_FAIL, out.root, round(out.latency_s, 6)])

    def _tick(self) -> None:
        for p, ledger in self.ledgers.items():
            expired = ledger.tick()
            if expired:
                dirty = self.dirty[p]
                for out in expired:
                    dirty.add(out.root)
                    self._outcome(out)

    def _flush(self, consumer: Consumer) -> None:
        produce = self.produce
        for p, roots in self.dirty.items():
            if not roots:
                continue
            ledger = self.ledgers[p]
            persisted = self.persisted[p]
            for root in roots:
                entry = ledger.get(root)
                if entry is not None:
                    produce(self.changelog, encode_entry(*entry), key=root_key(root), partition=p)
                    persisted.add(root)
                elif root in persisted:
                    produce(self.changelog, None, key=root_key(root), partition=p)  # type: ignore[arg-type]
                    persisted.discard(root)
            roots.clear()
        if self.results:
            self.producer.flush()
            for task, results in self.results.items():
                produce(self.result_topic, encode_results(results), partition=task)
            self.results = {}
        self.producer.flush()
        offsets = [TopicPartition(self.topic, p, off) for p, off in self.next_offset.items()]
        if offsets:
            try:
                consumer.commit(offsets=offsets, asynchronous=True)
            except KafkaException as exc:
                log.warning("[%s] offset commit failed (will retry): %s", ACKER_COMPONENT, exc)

    def _update_gauges(self) -> None:
        self.stats.gauges["pending"] = sum(len(ledger) for ledger in self.ledgers.values())
        self.stats.gauges["tasks"] = len(self.ledgers)

    def _run(self) -> None:
        conf = self.conf
        consumer = Consumer(consumer_config(self.bootstrap, component_group(self.topology.name, ACKER_COMPONENT), conf, self.kafka.get("consumer")))
        consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke)
        now = time.monotonic()
        next_flush = now + conf.flush_interval_secs
        next_tick = now
        batch = conf.batch_size
        try:
            while not self.stop_event.is_set():
                for msg in consumer.consume(batch, conf.flush_interval_secs):
                    self._apply(msg)
                now = time.monotonic()
                if now >= next_tick:
                    self._tick()
                    next_tick = now + 0.1
                if now >= next_flush:
                    self._flush(consumer)
                    next_flush = now + conf.flush_interval_secs
                self._maybe_stats(now)
        finally:
            self._flush(consumer)
            self._maybe_stats(time.monotonic(), final=True)
            self.producer.flush(5)
            consumer.close()
