"""The acker's wire format: what every executor sends to the acker and reads back.

JSON, never pickle (``schemas/acker-*.schema.json``). It lives in :mod:`streams` because
collectors write it and spout executors read it; :mod:`acker` builds on it
(``docs/design.md``, *Layers*).

Acker input (``squall.T.__acker``, partition = :func:`acker_partition`):
one record holds every op a collector flushed for that partition, in order::

    [[0, root, val, spout_task],   # init
     [1, root, val],               # ack   (already XOR-coalesced per root per flush)
     [2, root],                    # fail
     [3, root]]                    # reset_timeout

Ack result (``squall.T.__ack_result``, partition = the spout's global task id)::

    [[0, root, latency_s],         # tree complete
     [1, root, latency_s]]         # tree failed (fail, timeout or late)

Changelog (``squall.T.__acker.changelog``): see :mod:`acker.durable`.
"""

from __future__ import annotations

from typing import Any

from streams.codec import decode_json, encode_json
from streams.exceptions import DecodeError

# Op codes: Storm Acker's stream ids ``__ack_init``, ``__ack_ack``, ``__ack_fail`` and
# ``__ack_reset_timeout``, as small ints.
OP_INIT = 0
OP_ACK = 1
OP_FAIL = 2
OP_RESET = 3

RESULT_ACK = 0
RESULT_FAIL = 1

MAX_ITEMS_PER_RECORD = 4096
"""Ops or results per record: keeps every record far below the broker's message size limit
(an op is at most ~70 bytes of JSON, so a record stays under ~300 KB)."""


def chunks(items: list[Any]) -> list[list[Any]]:
    """Split ``items`` into lists of at most :data:`MAX_ITEMS_PER_RECORD`."""
    n = MAX_ITEMS_PER_RECORD
    return [items] if len(items) <= n else [items[i : i + n] for i in range(0, len(items), n)]


def encode_ops(ops: list[list[int]]) -> bytes:
    return encode_json(ops)


def decode_list(raw: bytes | None, *, component: str, topic: str, partition: int, offset: int) -> list[Any]:
    """Decode a JSON array record. Raises :class:`DecodeError` naming where it came from."""
    try:
        if raw is None:
            raise ValueError("null value")
        ops = decode_json(raw)
        if not isinstance(ops, list):
            raise ValueError("expected a JSON array")
        return ops
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(str(exc), component=component, topic=topic, partition=partition, offset=offset) from exc


def encode_results(results: list[list[Any]]) -> bytes:
    return encode_json(results)


# -- root id partitioning (Kafka's murmur2, byte for byte the Java client's Utils.murmur2) --

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


def acker_partition(root: int, ackers: int) -> int:
    """The ``__acker`` partition (acker task) that owns ``root`` (a 64-bit unsigned id)."""
    return (murmur2(root.to_bytes(8, "big")) & 0x7FFFFFFF) % ackers


def root_key(root: int) -> bytes:
    """The record key of a root id: 8 bytes, big-endian."""
    return root.to_bytes(8, "big")
