"""Packs: the tuples a task sends one partition of a bolt's topic, in one Kafka record.

Storm batches the tuples one worker transfers to another (``topology.transfer.batch.size``).
Here every tuple was one Kafka record: produced, appended by the broker, fetched and turned into
a ``Message``, ten records for a word count's line. :class:`TupleTransfer` stands between the
collectors and the executor's ``produce``: a tuple for a partition of a bolt's input topic
(``squall.<topology>.<bolt>``) is held until the executor's round ends (:meth:`flush`), or its
pack reaches ``max_tuples`` tuples or ``max_bytes`` bytes; then the partition's tuples go out as
one record, ``[4, head, [item, ...], ...]``, each run's shared head (stream, component, task,
epoch) said once (:func:`streams.wire.codec.encode_pack`). Every other record (outputs with a
key, dead letters, acker ops) passes straight through.

What stays as it was:

* The order of a partition's tuples (a pack keeps it, and packs leave in the order they filled).
* Outputs before acks: an executor flushes its packs before it seals a flush generation
  (:mod:`streams.runtime.flush_pipeline`), so the acker ops released with that generation
  follow the records holding the tuples they ack.
* Offsets: a bolt executes every tuple of a record before it moves past the record, so a
  committed offset still means "every tuple before it executed and flushed".
* A pack of one tuple is that tuple's envelope, byte for byte; ``max_tuples`` 1 turns packing off.

    >>> sent = []
    >>> t = TupleTransfer(lambda topic, value, key=None, partition=-1, headers=None: sent.append((topic, partition, value)),
    ...                   {"squall.wc.count"}, max_tuples=3)
    >>> for word in (b'"a"', b'"b"', b'"c"', b'"d"'):
    ...     t.produce("squall.wc.count", word, partition=0)
    >>> t.produce("squall.wc.count", b'"e"', partition=1)
    >>> t.produce("out", b"{}", key=b"k")           # not a tuple for a bolt: straight through
    >>> t.flush()
    >>> sent
    [('squall.wc.count', 0, b'[3,"a","b","c"]'), ('out', -1, b'{}'), ('squall.wc.count', 0, b'"d"'), ('squall.wc.count', 1, b'"e"')]
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from streams.runtime.acks import ProduceFn
from streams.wire.codec import encode_pack

DEFAULT_MAX_PACK_BYTES = 256 * 1024
"""The most a pack grows to (bytes of its envelopes): well under Kafka's 1 MiB ``message.max.bytes``."""


class _Pack:
    __slots__ = ("envelopes", "size")

    def __init__(self) -> None:
        self.envelopes: list[bytes] = []
        self.size = 0


class TupleTransfer:
    """Packs the tuples an executor sends, per target topic and partition (see the module docstring).

    ``produce``: the executor's ``produce(topic, value, key=None, partition=-1, headers=None)``;
    ``topics``: the bolts' input topics, whose keyless, header-less records with a partition are
    tuples; ``max_tuples`` (count, >= 1) and ``max_bytes`` (bytes) bound a pack.
    """

    def __init__(self, produce: ProduceFn, topics: Collection[str], *, max_tuples: int, max_bytes: int = DEFAULT_MAX_PACK_BYTES) -> None:
        if max_tuples < 1:
            raise ValueError(f"a pack holds at least one tuple, not {max_tuples}")
        self.send = produce
        self.topics = frozenset(topics)
        self.max_tuples = max_tuples
        self.max_bytes = max_bytes
        self.packs: dict[tuple[str, int], _Pack] = {}

    def produce(self, topic: str, value: bytes | None, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
        """Hold ``value`` for its partition's pack if it is a tuple for a bolt; else produce it now."""
        if self.max_tuples == 1 or key is not None or headers is not None or partition < 0 or value is None or topic not in self.topics:
            if headers is None:  # not a tuple for a bolt, or packing off: as it is
                self.send(topic, value, key, partition)
            else:
                self.send(topic, value, key, partition, headers)
            return
        where = (topic, partition)
        pack = self.packs.get(where)
        if pack is None:
            pack = self.packs[where] = _Pack()
        pack.envelopes.append(value)
        pack.size += len(value)
        if len(pack.envelopes) >= self.max_tuples or pack.size >= self.max_bytes:
            del self.packs[where]
            self._send(topic, partition, pack)

    def flush(self) -> None:
        """Produce every pack held, in the order they were begun (call before sealing a flush: outputs before acks)."""
        if not self.packs:
            return
        packs, self.packs = self.packs, {}
        for (topic, partition), pack in packs.items():
            self._send(topic, partition, pack)

    def __len__(self) -> int:
        """Tuples held, not yet produced."""
        return sum(len(p.envelopes) for p in self.packs.values())

    def _send(self, topic: str, partition: int, pack: _Pack) -> None:
        self.send(topic, encode_pack(pack.envelopes), None, partition)
