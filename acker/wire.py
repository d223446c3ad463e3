"""Wire forms of the acker's messages (``schemas/acker-*.schema.json``). JSON, never pickle.

Acker input (``squall.T.__acker``, partition = :func:`acker.partition.acker_partition`):
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
