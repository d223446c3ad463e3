"""The acker ops an executor buffers between flushes.

Storm's ``BoltOutputCollectorImpl`` keeps them too, and sends them as
``__ack_ack``/``__ack_fail``/``__ack_init``.

Ops are XOR-coalesced per root until the executor flushes: one op per root per flush, one
record per acker partition (XOR is associative, so acks of one root may be combined before
sending; nothing else in the protocol allows that shortcut).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams.wire.acker import OP_ACK, OP_FAIL, OP_INIT, OP_RESET, acker_partition, chunks, encode_ops, from_header

ProduceFn = Callable[..., None]
"""``produce(topic, value, key=None, partition=-1, headers=None)``: queue one record."""


class AckBuffer:
    """Acker ops buffered between flushes, XOR-coalesced per root (one op per root per flush).

    ``ackers`` is ``topology.acker.executors`` (> 0); ops go to partition
    ``murmur2(root) % ackers`` of ``topic``. Every record names ``sender`` (the executor's
    first global task id) and its ``epoch`` in a header (:func:`~streams.wire.acker.from_header`),
    so ackers drop what an older owner flushed late (:mod:`streams.runtime.fencing`).
    """

    __slots__ = ("ackers", "acks", "fails", "headers", "inits", "resets", "topic")

    def __init__(self, topic: str, ackers: int, sender: int = -1, epoch: int = 0) -> None:
        self.topic = topic
        self.ackers = ackers
        self.headers = from_header(sender, epoch)
        self.acks: dict[int, int] = {}
        self.fails: dict[int, str] = {}
        """Roots to fail, each with why (``""``: no reason given; :func:`~streams.wire.acker.why_text`)."""
        self.inits: list[tuple[int, int, int]] = []
        self.resets: set[int] = set()

    def __len__(self) -> int:
        return len(self.acks) + len(self.fails) + len(self.inits) + len(self.resets)

    def init(self, root: int, val: int, spout_task: int) -> None:
        """Queue the ``init`` of a new tree (Storm's ``__ack_init``): XOR of its edges, and the spout task to tell."""
        self.inits.append((root, val, spout_task))

    def ack(self, root: int, val: int) -> None:
        """XOR ``val`` into ``root``'s pending ack (Storm's ``__ack_ack``; coalesced per root until the flush)."""
        acks = self.acks
        acks[root] = acks.get(root, 0) ^ val

    def fail(self, root: int, why: str = "") -> None:
        """Queue a fail of ``root``'s tree (Storm's ``__ack_fail``); its pending acks are dropped.

        ``why`` (at most :data:`~streams.wire.acker.MAX_WHY_CHARS` characters) goes with the op
        to the acker and back to the spout, whose dead letter says it; the first one given in a
        flush is kept.
        """
        fails = self.fails
        if not fails.get(root):
            fails[root] = why
        self.acks.pop(root, None)

    def reset(self, root: int) -> None:
        """Queue a reset of ``root``'s timeout at the acker (Storm's ``__ack_reset_timeout``)."""
        self.resets.add(root)

    def take(self) -> AckBuffer:
        """Move every buffered op into a new buffer, returned; this one is left empty (a flush's ops, held until its outputs are delivered)."""
        out = AckBuffer(self.topic, self.ackers)
        out.headers = self.headers
        out.acks, self.acks = self.acks, {}
        out.fails, self.fails = self.fails, {}
        out.inits, self.inits = self.inits, []
        out.resets, self.resets = self.resets, set()
        return out

    def fail_acks(self, why: str) -> int:
        """Turn every pending ack into a fail saying ``why`` (the outputs of the flush they wait on were lost); returns how many."""
        roots = list(self.acks)
        for root in roots:
            self.fail(root, why)
        return len(roots)

    def drain(self) -> dict[int, list[list[Any]]]:
        """Take every buffered op, grouped by acker partition (inits first): ints, and a fail's ``why`` string."""
        parts: dict[int, list[list[Any]]] = {}
        n = self.ackers
        for root, val, task in self.inits:
            parts.setdefault(acker_partition(root, n), []).append([OP_INIT, root, val, task])
        for root, val in self.acks.items():
            if val:
                parts.setdefault(acker_partition(root, n), []).append([OP_ACK, root, val])
        for root, why in self.fails.items():
            parts.setdefault(acker_partition(root, n), []).append([OP_FAIL, root, why] if why else [OP_FAIL, root])
        for root in self.resets:
            parts.setdefault(acker_partition(root, n), []).append([OP_RESET, root])
        self.inits = []
        self.acks = {}
        self.fails = {}
        self.resets = set()
        return parts

    def flush(self, produce: ProduceFn) -> int:
        """Produce one record per acker partition; returns the number of ops sent."""
        sent = 0
        for part, ops in self.drain().items():
            for chunk in chunks(ops):
                produce(self.topic, encode_ops(chunk), partition=part, headers=self.headers)
            sent += len(ops)
        return sent
