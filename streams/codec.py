"""Tuple envelope codec: the value of every record on a bolt's input topic.

Wire form (``schemas/tuple.schema.json``): a UTF-8 JSON array

    [1, stream, source_component, source_task, values, anchors]

where ``anchors`` is Storm's ``anchors_to_ids`` flattened as ``[root, edge, root, edge, ...]``
(unsigned 64-bit integers). JSON keeps the format readable from any language; the
array form keeps it small. Never pickle.
"""

from __future__ import annotations

import json
from typing import Any

from streams.exceptions import DecodeError

VERSION = 1
_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)
_encode = _encoder.encode
_loads = json.loads


def encode_tuple(stream: str, component: str, task: int, values: list[Any], anchors: dict[int, int]) -> bytes:
    """Encode one tuple envelope. Raises ``TypeError`` for values JSON cannot hold."""
    flat: list[int] = []
    for root, edge in anchors.items():
        flat.append(root)
        flat.append(edge)
    return _encode([VERSION, stream, component, task, values, flat]).encode()


def decode_tuple(raw: bytes | None, *, component: str, topic: str, partition: int, offset: int) -> tuple[str, str, int, list[Any], dict[int, int]]:
    """Decode an envelope into ``(stream, source_component, source_task, values, anchors)``.

    Raises :class:`DecodeError` (naming component, topic, partition, offset) on any
    malformed record, so the caller can dead-letter it.
    """
    try:
        if raw is None:
            raise ValueError("null value")
        msg = _loads(raw)
        version, stream, source, task, values, flat = msg
        if version != VERSION:
            raise ValueError(f"unknown envelope version {version!r}")
        if not isinstance(values, list) or not isinstance(flat, list) or len(flat) % 2:
            raise ValueError("values/anchors have the wrong shape")
        anchors = {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}
        return stream, source, task, values, anchors
    except (ValueError, TypeError, UnicodeDecodeError) as exc:
        raise DecodeError(str(exc), component=component, topic=topic, partition=partition, offset=offset) from exc


def encode_json(obj: Any) -> bytes:
    return _encode(obj).encode()
