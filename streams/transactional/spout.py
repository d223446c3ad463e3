"""Transactional and opaque transactional Kafka spouts (seed points 16-18; storm-kafka-client's Trident spouts).

The batch coordinator and the batch emitter in one spout task.

Each :meth:`next_tuple` does at most one thing the coordinator (:mod:`streams.transactional.coordinator`)
asks for, and persists the coordinator's state first (:mod:`streams.transactional.coordinator_store`):

* **emit** a batch: read its offset ranges (:mod:`streams.transactional.range_reader`), emit every record
  as a tuple of the batch's one tree, then an end marker ``[txid, attempt, count]`` to
  every task of every subscriber (:mod:`streams.transactional.coordinated_bolt` counts against them);
* **commit** a processed batch: one ``[txid, attempt]`` tuple to every task of every
  committer bolt, in its own tree. A topology without committers commits at once.

``ack``/``fail`` of those trees drive the coordinator: a failed or timed-out batch, or a
failed commit, replays that batch and every later batch in flight. After a commit, the
spout's group offsets are set to the committed ends (for lag and ``squall run``; the
coordinator topic, not the group, is the truth).

* :class:`TransactionalKafkaSpout`: a replayed txid re-reads exactly the same ranges.
* :class:`OpaqueKafkaSpout`: a replayed txid is cut again from where the previous batch
  ends; its tuples may differ (override :meth:`OpaqueKafkaSpout.cut` to take less).

Both read their own topic ``squall.T.<spout>`` (``partitions`` of them) unless ``topics``
names others. The spout has exactly one task (the coordinator); records that the
translator cannot read are dead-lettered once and skipped.

Example::

    >>> from streams import TopologyBuilder
    >>> from streams.kafka.spout import RecordTranslator
    >>> b = TopologyBuilder()
    >>> _ = b.set_spout("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=2))
    >>> sorted(b.create_topology("t").components["lines"].streams)
    ['__batch_end', '__commit', 'default']
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from typing_extensions import override

from streams.exceptions import TopologyError
from streams.kafka.spout import RecordTranslator
from streams.model.batch import BATCH_END_FIELDS, BATCH_END_STREAM, COMMIT_FIELDS, COMMIT_STREAM, SYSTEM_STREAMS
from streams.model.collector import SpoutOutputCollector
from streams.model.component import OutputFieldsDeclarer
from streams.model.context import TopologyContext
from streams.model.io import DeadLetters
from streams.model.spec import ComponentDef
from streams.model.spout import Spout
from streams.transactional.batch_source import BatchSource, KafkaBatchSource
from streams.transactional.coordinator import BatchCoordinator, BatchMeta, Range
from streams.transactional.wiring import wire_transactional
from streams.wire.naming import TP, component_topic

log = logging.getLogger("squall.transactional")

BATCH_PHASES = ("batch_save_latency", "batch_emit_latency", "batch_process_latency", "batch_commit_wait_latency", "batch_commit_latency")
"""Where a batch's time goes, in the transactional spout (seconds, histograms in its stats):

* ``batch_save_latency``: each write of the coordinator's state and the broker's confirmation
  (before an emit, when a commit starts, after it ends);
* ``batch_emit_latency``: reading a batch's records and emitting them and its end markers;
* ``batch_process_latency``: the batch's emit to its tree's ack (every bolt's part, its markers);
* ``batch_commit_wait_latency``: a processed batch waiting for the batches before it to commit;
* ``batch_commit_latency``: its commit tuple to the commit tree's ack (every committer's
  ``finish_batch``: the state transaction).
"""


class TransactionalKafkaSpout(Spout):
    """A transactional spout over Kafka: every replay of a txid re-reads the same ranges.

    Args:
      translator: record -> tuple (default: the value as UTF-8 text in field ``value``).
      topics: source topics (default: the spout's own topic ``squall.T.<spout>``).
      partitions: how many partitions its own topic has (ignored with ``topics``).
    """

    transactional = True
    opaque = False

    def __init__(self, translator: RecordTranslator | None = None, topics: list[str] | None = None, partitions: int = 4) -> None:
        self.translator = translator or RecordTranslator()
        self.topics = list(topics) if topics else None
        self.partitions = partitions
        self.coordinator: BatchCoordinator | None = None
        self.source: BatchSource | None = None
        """The coordinator's state and the source records (:mod:`streams.transactional.batch_source`)."""
        self.collector: Any = None  # set by open()
        self.dead_letters: DeadLetters | None = None
        self.component = "?"
        self.subscribers: list[int] = []
        self.has_committers = False
        self.poisoned: set[tuple[str, int, int]] = set()
        self.clock: Callable[[], float] = time.monotonic
        """Monotonic seconds, for the batch phase latencies (injectable)."""
        self.phase: dict[str, Callable[[float], None]] = {}
        """Recorders of each batch phase's seconds (:data:`BATCH_PHASES`), set by :meth:`open`."""
        self.emitted_at: dict[tuple[int, int], float] = {}
        """When each batch attempt in flight was emitted."""
        self.acked_at: dict[int, float] = {}
        """When each processed batch's tree was acked (it waits to commit in txid order)."""
        self.commit_at: dict[tuple[int, int], float] = {}
        """When each batch's commit tuple was emitted."""

    # -- declaration -----------------------------------------------------------------
    @override
    def validate(self, component_id: str) -> None:
        if self.partitions < 1:
            raise TopologyError(f"[{component_id}] {type(self).__name__} partitions must be >= 1, got {self.partitions}")

    def input_partitions(self, num_tasks: int) -> int:
        """Its own topic's partitions (the batches' source, not its task count)."""
        return self.partitions

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        for stream, fields in self.translator.streams().items():
            declarer.declare(list(fields), stream=stream)
        declarer.declare(list(BATCH_END_FIELDS), stream=BATCH_END_STREAM, direct=True)
        declarer.declare(list(COMMIT_FIELDS), stream=COMMIT_STREAM)

    def extend_topology(self, component_id: str, defs: list[ComponentDef]) -> None:
        """Make the topology transactional (:func:`streams.transactional.wiring.wire_transactional`).

        Raises TopologyError naming the component at fault.
        """
        wire_transactional(component_id, defs)

    # -- lifecycle -------------------------------------------------------------------
    @override
    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self.collector = collector
        self.dead_letters = context.io.dead_letters
        self.component = context.this_component_id
        topology = context.topology
        name = topology.name
        io = context.io
        topics = self.topics or [component_topic(name, self.component)]
        config = context.config
        self.source = (
            io.batches.batch_source(self.component, topics)
            if io.batches is not None
            else KafkaBatchSource(name, self.component, topics, io.bootstrap, io.kafka, config)
        )
        state = self.source.load()
        self.coordinator = BatchCoordinator(state, self.opaque, config.batches_in_flight, config.batch_records, self.cut if self.opaque else None)
        partitions = self.source.partitions
        cdef = topology.components[self.component]
        targets: dict[str, range] = {}
        for stream in cdef.streams:
            if stream in SYSTEM_STREAMS:
                continue
            for target, _sub in topology.subscribers(self.component, stream):
                targets[target.id] = target.task_ids
        self.subscribers = sorted(t for ids in targets.values() for t in ids)
        self.has_committers = bool(topology.subscribers(self.component, COMMIT_STREAM))
        c = self.coordinator.counters
        metrics: dict[str, Callable[[], float]] = {
            "batches_emitted": lambda: c.emitted,
            "batches_replayed": lambda: c.replayed,
            "batches_committed": lambda: c.committed,
            "records_committed": lambda: c.records_committed,
            "last_txid": lambda: self.coordinator.committed if self.coordinator is not None else 0,
            "poison": lambda: len(self.poisoned),
        }
        for key, read in metrics.items():
            context.register_metric(key, read)
        self.phase = {name: context.register_latency(name) for name in BATCH_PHASES}
        log.info(
            "[%s] %s spout: committed txid %d, %d batches to replay, reading %s",
            self.component,
            "opaque" if self.opaque else "transactional",
            state.committed,
            len(state.batches),
            ", ".join(f"{t}[{p}]" for t, p in partitions),
        )

    def cut(self, txid: int, attempt: int, proposed: dict[TP, Range]) -> dict[TP, Range]:
        """The ranges of a new batch, or of a replay cut again.

        ``proposed``: each partition from where the batch before ends, up to
        ``squall.batch.records``. Only an opaque spout may change them; override to take less: what a batch leaves
        out goes into a later one.
        """
        return proposed

    @override
    def close(self) -> None:
        if self.source is not None:
            self.source.close()

    # -- the coordinator's actions -----------------------------------------------------
    @override
    def next_tuple(self) -> None:
        assert self.coordinator is not None and self.source is not None
        action = self.coordinator.next_action(self.source.highs(), self.source.starts())
        if action is None:
            return
        if action.kind == "commit":
            self._commit(action.batch)  # saves the batch, frozen, before its commit tuple (choosing a commit changes no state)
        else:
            self._save()  # the new batch or attempt is durable before it is emitted
            self._emit(action.batch)

    @override
    def wind_down(self) -> bool:
        """While the worker drains: commit the batches already processed, start no new one; True while a batch in flight may still commit."""
        assert self.coordinator is not None
        action = self.coordinator.next_commit()
        if action is not None:
            self._commit(action.batch)
        return self.coordinator.settling()

    def _save(self) -> None:
        """Write the coordinator's state to its topic and wait for the broker (timed: ``batch_save_latency``)."""
        assert self.coordinator is not None and self.source is not None
        began = self.clock()
        self.source.save(self.coordinator.snapshot())
        self.phase["batch_save_latency"](self.clock() - began)

    def _emit(self, b: BatchMeta) -> None:
        assert self.coordinator is not None and self.source is not None
        began = self.clock()
        records = self.source.read(b.ranges)
        tree = self.collector.open_tree(("batch", b.txid, b.attempt), (b.txid, b.attempt))
        sent: dict[int, int] = {}
        for tp in sorted(records):
            for msg in records[tp]:
                try:
                    out = self.translator.translate(msg)
                except Exception as exc:
                    self._poison(msg, exc)
                    continue
                if out is None:
                    continue
                stream, values = out
                for task in tree.emit(values, stream=stream):
                    sent[task] = sent.get(task, 0) + 1
        for task in self.subscribers:
            tree.emit_direct(task, [b.txid, b.attempt, sent.get(task, 0)], BATCH_END_STREAM)
        tree.close()
        self.coordinator.emitted(b)
        now = self.clock()
        self.phase["batch_emit_latency"](now - began)
        self.emitted_at[(b.txid, b.attempt)] = now
        if b.attempt > 1:
            log.info("[%s] replaying batch %d (attempt %d, %d records)", self.component, b.txid, b.attempt, b.records())

    def _poison(self, msg: Any, exc: Exception) -> None:
        key = (msg.topic() or "", msg.partition() or 0, msg.offset() or 0)
        if key in self.poisoned:
            return
        self.poisoned.add(key)
        log.warning("[%s] poison record %s[%s]@%s: %s", self.component, key[0], key[1], key[2], exc)
        if self.dead_letters is not None:
            self.dead_letters.dead_letter(msg, f"[{self.component}] translator failed on {key[0]}[{key[1]}]@{key[2]}: {exc}", 0)

    def _commit(self, b: BatchMeta) -> None:
        assert self.coordinator is not None and self.source is not None
        self.coordinator.commit_started(b)
        self._save()  # frozen: a replay re-reads these ranges
        now = self.clock()
        acked = self.acked_at.pop(b.txid, None)
        if acked is not None:
            self.phase["batch_commit_wait_latency"](now - acked)
        self.commit_at[(b.txid, b.attempt)] = now
        if not self.has_committers:
            self._committed(b.txid, b.attempt)
            return
        tree = self.collector.open_tree(("commit", b.txid, b.attempt), (b.txid, b.attempt))
        tree.emit([b.txid, b.attempt], stream=COMMIT_STREAM)
        tree.close()

    def _committed(self, txid: int, attempt: int) -> None:
        assert self.coordinator is not None and self.source is not None
        b = self.coordinator.commit_acked(txid, attempt)
        if b is None:
            return
        started = self.commit_at.pop((txid, attempt), None)
        if started is not None:
            self.phase["batch_commit_latency"](self.clock() - started)
        self._save()
        self.source.commit_group({tp: end for tp, (_, end) in b.ranges.items()})

    # -- outcomes --------------------------------------------------------------------
    @override
    def ack(self, msg_id: Any) -> None:
        assert self.coordinator is not None
        kind, txid, attempt = msg_id
        if kind == "batch":
            emitted = self.emitted_at.pop((txid, attempt), None)
            if emitted is not None:
                now = self.clock()
                self.phase["batch_process_latency"](now - emitted)
                self.acked_at[txid] = now
            self.coordinator.batch_acked(txid, attempt)
        else:
            self._committed(txid, attempt)

    @override
    def fail(self, msg_id: Any) -> None:
        assert self.coordinator is not None
        kind, txid, attempt = msg_id
        log.info("[%s] %s of batch %d (attempt %d) failed: replaying it and every later batch in flight", self.component, kind, txid, attempt)
        self.emitted_at = {k: v for k, v in self.emitted_at.items() if k[0] < txid}  # this batch and every later one are emitted again
        self.acked_at = {k: v for k, v in self.acked_at.items() if k < txid}
        self.commit_at.pop((txid, attempt), None)
        if kind == "batch":
            self.coordinator.batch_failed(txid, attempt)
        else:
            self.coordinator.commit_failed(txid, attempt)


class OpaqueKafkaSpout(TransactionalKafkaSpout):
    """An opaque transactional spout: a replayed txid is cut again, so it may carry other tuples than its first attempt (seed point 17).

    Pair it with :class:`streams.state.OpaqueState`.
    """

    opaque = True
