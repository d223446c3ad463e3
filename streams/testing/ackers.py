"""The kit's acker tasks: the acker's own ledger (:class:`acker.durable.DurableLedger`) over the in-memory log.

As :class:`acker.runtime_native.AckerExecutor` does per input record: decode the ops, apply
them, queue each outcome for its spout task (``record_outcomes``); then write the results to
``squall.T.__ack_result``, one partition per spout task. What it leaves out: the changelog
and offset commits (an acker task does not crash in the kit), and the stats it publishes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acker.common import record_outcomes, record_resets
from acker.durable import DurableLedger
from acker.ledger import Ledger
from streams.config import TopologyConfig
from streams.exceptions import DecodeError
from streams.model.io import DeadLetters
from streams.monitoring.stats import ExecutorStats
from streams.testing.memlog import MemoryLog
from streams.wire.acker import chunks, decode_ops, encode_results
from streams.wire.naming import ACKER_COMPONENT, ack_result_topic, acker_topic


class LocalAckers:
    """``topology.acker.executors`` acker tasks of topology ``name``, each a ledger on ``clock`` (wall seconds).

    ``dead_letters``: where an undecodable acker record goes.
    """

    def __init__(self, name: str, conf: TopologyConfig, log: MemoryLog, clock: Callable[[], float], dead_letters: DeadLetters) -> None:
        self.log = log
        self.topic = acker_topic(name)
        self.results_topic = ack_result_topic(name)
        self.dead_letters = dead_letters
        self.stats = ExecutorStats(name, ACKER_COMPONENT, "acker", "kit")
        self.ledgers = {p: DurableLedger(Ledger(conf.message_timeout_secs, clock=clock, buckets=conf.acker_buckets)) for p in range(conf.ackers)}
        self.pos = dict.fromkeys(self.ledgers, 0)
        """The next op record of each acker partition."""

    def turn(self) -> bool:
        """Apply every op record not applied yet; returns whether there were any."""
        moved = False
        for p, dl in self.ledgers.items():
            records = self.log.partition(self.topic, p)
            if self.pos[p] >= len(records):
                continue
            results: dict[int, list[list[Any]]] = {}
            for rec in records[self.pos[p] :]:
                off = rec.offset()
                try:
                    outs = dl.apply(off, decode_ops(rec.value(), component=ACKER_COMPONENT, topic=self.topic, partition=p, offset=off))
                except (DecodeError, ValueError, IndexError, TypeError) as exc:
                    self.dead_letters.dead_letter_raw(rec.value(), rec.key(), str(exc), topic=self.topic, partition=p, offset=off, attempts=0)
                    continue
                record_outcomes(outs, self.stats, results)
                if dl.resets:
                    record_resets(dl.take_resets(), results)
            self.pos[p] = len(records)
            self._send(results)
            moved = True
        return moved

    def expire(self) -> None:
        """Time out the trees past ``topology.message.timeout.secs`` (the ledgers' rotating buckets)."""
        results: dict[int, list[list[Any]]] = {}
        for dl in self.ledgers.values():
            record_outcomes(dl.expire(), self.stats, results)
        self._send(results)

    def waiting(self) -> bool:
        """Op records not applied yet."""
        return any(self.pos[p] < self.log.end(self.topic, p) for p in self.ledgers)

    def _send(self, results: dict[int, list[list[Any]]]) -> None:
        for task, res in results.items():
            for chunk in chunks(res):
                self.log.produce(self.results_topic, encode_results(chunk), partition=task)
