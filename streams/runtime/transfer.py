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

**Runs.** A collector hands a tuple in one tree (or untracked) with no tuple id (a
transactional batch's tuples too: a run holds one batch) to :meth:`TupleTransfer.emit_run` as its head, root and encoded values, not as an envelope.
Consecutive such tuples of one head, root and batch in a pack form a run, which travels as ``[head,
root, edge, [values, ...]]`` in a version 6 pack (:func:`streams.wire.codec.encode_run`): one
edge id for the run, XORed into the ack val of the tuple that began it (``emit_run`` returns it),
instead of one edge id per tuple. The reader acks it once, with the last of the run's tuples
to be acked (:class:`streams.wire.codec.RunAnchors`). Why: per word, a word count drew an edge
id, wrote and parsed two 64-bit ids, built a map of them and XORed them into the pending ack;
docs/design.md, "Runs", has the measurements.

A run's edge goes into the ack val of the tuple whose emit began it: later tuples of the run
anchored to other inputs of the same tree add nothing to theirs. That is sound because the
edge is XORed once when that input is acked and once when every tuple of the run is acked;
until then the other inputs' own edges keep the tree pending. The property tests
(``tests/unit/acker/test_ledger_properties.py``) build random trees both ways and deliver
their ops shuffled, dropped and repeated.

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
from streams.wire.codec import ROOTED_PACK_VERSION, encode_pack, encode_run, run_envelope
from streams.wire.ids import new_id

DEFAULT_MAX_PACK_BYTES = 256 * 1024
"""The most a pack grows to (bytes of its envelopes): well under Kafka's 1 MiB ``message.max.bytes``."""

_ROOTED_PREFIX = b"[%d," % ROOTED_PACK_VERSION
_RUN_BYTES = 44
"""A run's bytes besides its head and values (:func:`~streams.wire.codec.encode_run`): two 20-digit ids and the brackets and commas around them."""


class _Run:
    """Consecutive tuples of one head in one tree (``root`` 0: untracked) and one batch, sent with one ``edge``."""

    __slots__ = ("batch", "edge", "head", "root", "values")

    def __init__(self, head: bytes, root: int, edge: int, batch: tuple[int, int] | None) -> None:
        self.head = head
        self.root = root
        self.edge = edge
        self.batch = batch
        self.values: list[bytes] = []


class _Pack:
    __slots__ = ("last", "parts", "runs", "size", "tuples")

    def __init__(self) -> None:
        self.parts: list[bytes | _Run] = []
        """Envelopes and runs, in the order they were emitted."""
        self.runs = 0
        self.tuples = 0
        self.size = 0
        self.last: _Run | None = None
        """The run the next tuple of the same head and root joins (None after an envelope)."""


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
        pack.parts.append(value)
        pack.last = None
        pack.tuples += 1
        pack.size += len(value)
        if pack.tuples >= self.max_tuples or pack.size >= self.max_bytes:
            del self.packs[where]
            self._send(topic, partition, pack)

    def emit_run(self, topic: str, partition: int, head: bytes, root: int, values: bytes, batch: tuple[int, int] | None = None) -> int:
        """Send one tuple of ``head`` (:func:`~streams.wire.codec.encode_head`) in tree ``root`` (0: untracked) to ``partition`` of ``topic``.

        ``values`` is :func:`~streams.wire.codec.encode_values`; ``batch`` the tuple's ``(txid,
        attempt)`` in a transactional topology (a run holds one batch). Returns the edge id the caller
        XORs into the anchor's ack val: a new one when the tuple begins a run (or travels
        alone: packing off, or not a bolt's topic), else 0 (it joined the open run of the same
        head and root, whose edge is already in an ack val). Always 0 when ``root`` is 0.
        """
        if self.max_tuples == 1 or topic not in self.topics:
            edge = new_id() if root else 0
            self.send(topic, run_envelope(head, root, edge, values, batch), None, partition)
            return edge
        where = (topic, partition)
        pack = self.packs.get(where)
        if pack is None:
            pack = self.packs[where] = _Pack()
        run = pack.last
        if run is not None and run.root == root and run.head == head and run.batch == batch:
            edge = 0
        else:
            edge = new_id() if root else 0
            run = pack.last = _Run(head, root, edge, batch)
            pack.parts.append(run)
            pack.runs += 1
            pack.size += len(head) + _RUN_BYTES
        run.values.append(values)
        pack.tuples += 1
        pack.size += len(values) + 1
        if pack.tuples >= self.max_tuples or pack.size >= self.max_bytes:
            del self.packs[where]
            self._send(topic, partition, pack)
        return edge

    def flush(self) -> None:
        """Produce every pack held, in the order they were begun (call before sealing a flush: outputs before acks)."""
        if not self.packs:
            return
        packs, self.packs = self.packs, {}
        for (topic, partition), pack in packs.items():
            self._send(topic, partition, pack)

    def __len__(self) -> int:
        """Tuples held, not yet produced."""
        return sum(p.tuples for p in self.packs.values())

    def _send(self, topic: str, partition: int, pack: _Pack) -> None:
        parts = pack.parts
        if not pack.runs:  # envelopes only: a version 4 pack (or the one envelope)
            self.send(topic, encode_pack(parts), None, partition)  # type: ignore[arg-type]
            return
        if pack.tuples == 1:
            run = parts[0]
            assert isinstance(run, _Run)
            self.send(topic, run_envelope(run.head, run.root, run.edge, run.values[0], run.batch), None, partition)
            return
        segments = [p if type(p) is bytes else encode_run(p.head, p.root, p.edge, p.values, p.batch) for p in parts]  # type: ignore[union-attr]
        self.send(topic, _ROOTED_PREFIX + b",".join(segments) + b"]", None, partition)
