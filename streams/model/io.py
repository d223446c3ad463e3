"""What a task may use of its executor: typed capabilities, each a Protocol stated once (no I/O here).

The executor (:class:`streams.runtime.executor.Executor`) and the test kit
(:class:`streams.testing.LocalTopology`) each provide them; components reach them through
``context.io`` (:class:`ExecutorIO`). Storm hands the same through its ``TopologyContext``
and ``WorkerTopologyContext`` (resources, the shared executor data).

=====================  =====================================================================
capability             what a component uses it for
=====================  =====================================================================
:class:`DeadLetters`   a KafkaSpout, a transactional spout and the sinks give up a record
:class:`StateStores`   Trident state (a committer) and a stateful bolt's checkpoints
:class:`Producers`     a KafkaBolt's own producer (the kit's writes to its in-memory log)
:class:`BatchSources`  a transactional spout's coordinator state and source records
=====================  =====================================================================
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from streams.exceptions import FatalError, StateError
from streams.state.backend import KvStore, StateBackend
from streams.wire.dead_letter import dead_letter_headers
from streams.wire.naming import dead_letter_topic

log = logging.getLogger("squall.dead_letters")


class SourceRecord(Protocol):
    """A Kafka record as a dead letter keeps it (``confluent_kafka.Message`` is one)."""

    def value(self) -> bytes | None:
        """The record's value."""
        ...

    def key(self) -> bytes | None:
        """The record's key."""
        ...

    def topic(self) -> str | None:
        """The topic it was read from."""
        ...

    def partition(self) -> int | None:
        """Its partition."""
        ...

    def offset(self) -> int | None:
        """Its offset."""
        ...


class DeadLetters(Protocol):
    """Writes records that are given up to ``squall.T.__dlq``, with headers naming where and why (:mod:`streams.wire.dead_letter`).

    An implementation subclasses it and writes :meth:`dead_letter_raw`; :meth:`dead_letter` comes with it.
    """

    def dead_letter(self, msg: SourceRecord, reason: str, attempts: int, details: Mapping[str, str] | None = None) -> None:
        """Dead-letter record ``msg`` after ``attempts`` replays because of ``reason``; ``details`` become headers.

        By its parts (:meth:`dead_letter_raw`), unless an implementation does more.
        """
        self.dead_letter_raw(
            msg.value(),
            msg.key(),
            reason,
            topic=msg.topic() or "",
            partition=msg.partition() or 0,
            offset=msg.offset() or 0,
            attempts=attempts,
            details=details,
        )

    def dead_letter_raw(
        self,
        value: bytes | None,
        key: bytes | None,
        reason: str,
        *,
        topic: str,
        partition: int,
        offset: int,
        attempts: int,
        details: Mapping[str, str] | None = None,
    ) -> None:
        """Dead-letter a record given by its parts (a tuple a sink cannot write, a faust event)."""
        ...


class DeadLetterWriter(DeadLetters):
    """The :class:`DeadLetters` of an executor and of the test kit: records to ``squall.T.__dlq`` through ``produce``.

    Each keeps its key and value; its headers name the component, where it was read and why
    (:func:`streams.wire.dead_letter.dead_letter_headers`).

    Args:
      topology: the topology's name (the topic is ``squall.<topology>.__dlq``).
      component: the component giving the record up.
      produce: ``produce(topic, value, key=..., headers=...)``: the executor's producer, or the kit's in-memory log.
      on_written: called after each dead letter (the executor counts ``dead_lettered``).

    >>> sent = []
    >>> w = DeadLetterWriter("wc", "split", lambda topic, value, key=None, headers=None: sent.append((topic, value, dict(headers)["squall.offset"])))
    >>> w.dead_letter_raw(b"x", None, "poison", topic="squall.wc.split", partition=0, offset=7, attempts=0)
    >>> sent
    [('squall.wc.__dlq', b'x', '7')]
    """

    def __init__(self, topology: str, component: str, produce: Callable[..., None], on_written: Callable[[], None] | None = None) -> None:
        self.dlq_topic = dead_letter_topic(topology)
        self.component = component
        self.produce = produce
        self.on_written = on_written

    def dead_letter_raw(
        self,
        value: bytes | None,
        key: bytes | None,
        reason: str,
        *,
        topic: str,
        partition: int,
        offset: int,
        attempts: int,
        details: Mapping[str, str] | None = None,
    ) -> None:
        """Write the record with headers naming where (``topic``, ``partition``, ``offset``) and why (``reason``, ``attempts``, ``details``)."""
        headers = dead_letter_headers(reason, component=self.component, topic=topic, partition=partition, offset=offset, attempts=attempts, details=details)
        self.produce(self.dlq_topic, value or b"", key=key, headers=headers)
        if self.on_written is not None:
            self.on_written()
        log.warning("[%s] dead-lettered %s[%s]@%s after %d attempts: %s", self.component, topic, partition, offset, attempts, reason)


class StateStores(Protocol):
    """The state stores of an executor, one per URL, shared by its tasks (:class:`streams.state.OpenedStores`)."""

    def backend(self, url: str, component: str) -> StateBackend:
        """Trident state's backend at ``url``. Raises StateError naming ``component``."""
        ...

    def kv_store(self, url: str, component: str) -> KvStore:
        """Stateful bolts' checkpoint store at ``url`` (``kafka://``: a compacted changelog). Raises StateError naming ``component``."""
        ...

    def close(self) -> None:
        """Close what was opened."""
        ...


class RecordProducer(Protocol):
    """What a component producing on its own needs of a producer (``confluent_kafka.Producer`` is one)."""

    def produce(self, topic: str, value: Any = None, key: Any = None, *args: Any, **kwargs: Any) -> None:
        """Queue one record (librdkafka's arguments: ``partition``, ``headers``, ``on_delivery``)."""
        ...

    def poll(self, timeout: float = ...) -> int:
        """Serve delivery callbacks for up to ``timeout`` seconds; returns how many."""
        ...

    def flush(self, timeout: float = ...) -> int:
        """Wait up to ``timeout`` seconds for every queued record; returns how many are left."""
        ...


class Producers(Protocol):
    """Makes the producers components open themselves (a KafkaBolt's), from librdkafka settings."""

    def new_producer(self, config: dict[str, Any]) -> RecordProducer:
        """A producer configured by ``config``."""
        ...


class BatchSources(Protocol):
    """Gives a transactional spout its coordinator state and source records."""

    def batch_source(self, component: str, topics: list[str]) -> Any:
        """The :class:`streams.transactional.batch_source.BatchSource` of spout ``component`` reading ``topics``."""
        ...


@dataclass
class ExecutorIO:
    """What a task may use of its executor (see the module docstring).

    ``bootstrap`` and ``kafka`` (client overrides ``{"consumer": {...}, "producer": {...}}``)
    name the Kafka it runs on; each capability is None where the executor has none (a bare
    context in a unit test). ``producers`` and ``batches`` None: Kafka's own.
    """

    bootstrap: str = ""
    kafka: dict[str, Any] = field(default_factory=dict)
    dead_letters: DeadLetters | None = None
    stores: StateStores | None = None
    producers: Producers | None = None
    batches: BatchSources | None = None
    source_positions: Callable[[], dict[int, int]] | None = None
    """The KafkaSpouts' committed offsets by source key (:mod:`streams.kafka.positions`): what a stateful bolt may forget."""
    epoch: int = 0
    """The worker's claim epoch (:mod:`streams.runtime.fencing`): a Trident state refuses a commit from an older one than its writer's last (0: not checked)."""
    latency: Callable[[str], Callable[[float], None]] | None = None
    """``latency(name)``: a recorder of seconds into the executor's histogram ``name``
    (published with its stats, :meth:`streams.model.context.TopologyContext.register_latency`); None: not recorded."""
    shared: dict[str, Any] = field(default_factory=dict)
    """Handles a task's copies share (a BatchBolt gets a fresh copy per batch), by a key the component picks.

    Closed with the stores, if they have ``close()``."""

    def state_stores(self, component: str) -> StateStores:
        """:attr:`stores`, or StateError naming ``component`` where there are none."""
        if self.stores is None:
            raise StateError(f"[{component}] no state stores here: a stateful component runs in an executor or the test kit")
        return self.stores

    def dead_letter_sink(self, component: str) -> DeadLetters:
        """:attr:`dead_letters`, or FatalError naming ``component`` where there are none."""
        if self.dead_letters is None:
            raise FatalError(f"[{component}] no dead-letter topic here: it runs in an executor or the test kit")
        return self.dead_letters

    def close(self) -> None:
        """Close the stores and the shared handles that have ``close()``."""
        if self.stores is not None:
            self.stores.close()
        for handle in self.shared.values():
            close = getattr(handle, "close", None)
            if callable(close):
                close()
        self.shared.clear()
