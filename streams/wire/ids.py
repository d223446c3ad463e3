"""Root and edge ids: random, non-zero, 64-bit (Storm's ``MessageId.generateId``).

Ids come from a private generator seeded from the OS, never from the global ``random``:
a user who seeds ``random`` (say in ``prepare()``) would otherwise make tasks draw the
same ids, and equal edge ids cancel in the acker's XOR.

>>> from streams.wire.ids import new_id
>>> a, b = new_id(), new_id()
>>> 0 < a < 2**64 and 0 < b < 2**64 and a != b
True
"""

from __future__ import annotations

import os
import random
import zlib

_ids = random.Random(int.from_bytes(os.urandom(32), "big"))
_bits = _ids.getrandbits


def seed_ids(seed: int) -> None:
    """Make the id sequence repeatable from ``seed``: the test kit's deterministic runs (:mod:`streams.testing`); the runtime never calls it."""
    _ids.seed(seed)


def new_id() -> int:
    """A random id in ``1 .. 2**64 - 1`` (0 is reserved: an empty table slot, "no root")."""
    return _bits(64) or 1


def source_key(topic: str, partition: int) -> int:
    """A source partition's 31-bit key in tuple ids (crc32 of ``topic:partition``; stable across processes).

    >>> source_key("events", 3) == source_key("events", 3) != source_key("events", 4)
    True
    """
    return zlib.crc32(f"{topic}:{partition}".encode()) & 0x7FFFFFFF


def child_path(path: int, n: int) -> int:
    """The path of the ``n``-th emit anchored to a tuple whose path is ``path`` (32 bits, deterministic).

    A bolt that emits the same tuples in the same order for the same input gives its children
    the same ids on every replay (:mod:`streams.state.keyvalue`).

    >>> child_path(0, 0) == child_path(0, 0) != child_path(0, 1)
    True
    """
    x = (path * 0x9E3779B1 + n + 1) & 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & 0xFFFFFFFF
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & 0xFFFFFFFF
    return x ^ (x >> 16)
