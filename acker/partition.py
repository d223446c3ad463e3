"""Kafka's murmur2 partitioner, the one partitioner Squall uses for root ids.

Byte-for-byte the Java client's ``Utils.murmur2`` / librdkafka's ``murmur2`` partitioner,
so a root id lands on the same ``__acker`` partition whichever client produced it.
A root id is hashed as its 8-byte big-endian encoding.
"""

from __future__ import annotations

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """32-bit murmur2 of ``data`` as an unsigned int (Kafka's seed 0x9747b28c)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length & ~3
    for i in range(0, n4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    extra = length & 3
    if extra == 3:
        h ^= data[n4 + 2] << 16
    if extra >= 2:
        h ^= data[n4 + 1] << 8
    if extra >= 1:
        h ^= data[n4]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


def partition_for_bytes(key: bytes, partitions: int) -> int:
    """Kafka's default partition for ``key``: ``toPositive(murmur2(key)) % partitions``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def acker_partition(root: int, ackers: int) -> int:
    """The ``__acker`` partition (acker task) that owns ``root`` (a 64-bit unsigned id)."""
    return (murmur2(root.to_bytes(8, "big")) & 0x7FFFFFFF) % ackers


def root_key(root: int) -> bytes:
    """The record key of a root id: 8 bytes, big-endian."""
    return root.to_bytes(8, "big")
