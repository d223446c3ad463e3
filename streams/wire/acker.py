"""The acker's wire format: what every executor sends to the acker and reads back.

JSON, never pickle (``schemas/acker-*.schema.json``). It lives in :mod:`streams` because
collectors write it and spout executors read it; :mod:`acker` builds on it
(``docs/design.md``, *Layers*).

Acker input (``squall.T.__acker``, partition = :func:`acker_partition`):
one record holds every op a collector flushed for that partition, in order::

    [[0, root, val, spout_task],   # init
     [1, root, val],               # ack   (already XOR-coalesced per root per flush)
     [2, root],                    # fail
     [2, root, why],               # fail, saying why (at most MAX_WHY_CHARS characters)
     [3, root]]                    # reset_timeout

with the header ``squall.from: "<sender>:<epoch>"`` (:func:`from_header`): the sending
executor's first global task id and its epoch, so an acker drops what an older owner of
those tasks flushed late (:mod:`streams.runtime.fencing`).

Ack result (``squall.T.__ack_result``, partition = the spout's global task id)::

    [[0, root, latency_s],         # tree complete
     [1, root, latency_s],         # tree failed (fail, timeout or late)
     [1, root, latency_s, why],    # tree failed, and why (the fail's own, or the acker's)
     [2, root, 0]]                 # a bolt reset the tree's timeout: restart the spout's clock too

Changelog (``squall.T.__acker.changelog``): see :mod:`acker.durable`.
"""

from __future__ import annotations

from typing import Any

from streams.exceptions import DecodeError
from streams.wire.codec import decode_json, encode_json

# Op codes: Storm Acker's stream ids ``__ack_init``, ``__ack_ack``, ``__ack_fail`` and
# ``__ack_reset_timeout``, as small ints.
OP_INIT = 0
OP_ACK = 1
OP_FAIL = 2
OP_RESET = 3

MAX_WHY_CHARS = 300
MAX_SPOUT_TASK = 0xFFFD
"""The largest spout task an init may name (the acker's table packs a task in 16 bits, two values reserved: :meth:`acker.table.CompactTable.pack_task`)."""
"""The longest ``why`` of a fail op or result, in characters (a longer one is cut, with ``...``)."""

ACKER_TIMEOUT = "[__acker] timeout"
"""The ``why`` of a tree the acker itself timed out (its result's fourth item)."""

RESULT_ACK = 0
RESULT_FAIL = 1
RESULT_RESET = 2
"""Storm's acker forwards ``__ack_reset_timeout`` to the spout, whose own timeout would fail the tree otherwise."""

MAX_ITEMS_PER_RECORD = 4096
"""Ops or results per record: keeps every record far below the broker's message size limit
(an op is at most ~70 bytes of JSON, so a record stays under ~300 KB)."""


FROM_HEADER = "squall.from"
"""The header naming an ``__acker`` record's sender and its epoch (:func:`from_header`)."""


def from_header(sender: int, epoch: int) -> list[tuple[str, bytes]]:
    """The headers of an ``__acker`` record sent by global task ``sender`` (an executor's first task) in life ``epoch``.

    >>> from_header(4, 1700000000250)
    [('squall.from', b'4:1700000000250')]
    """
    return [(FROM_HEADER, f"{sender}:{epoch}".encode())]


def read_from(headers: Any) -> tuple[int, int] | None:
    """``(sender, epoch)`` from a record's headers (a list of ``(name, value)`` or a mapping), or None when absent or malformed.

    >>> read_from([("squall.from", b"4:1700000000250")]), read_from(None), read_from([("squall.from", b"x")])
    ((4, 1700000000250), None, None)
    """
    if not headers:
        return None
    items = headers.items() if isinstance(headers, dict) else headers
    for name, value in items:
        if name == FROM_HEADER and isinstance(value, bytes | bytearray):
            sender, _, epoch = bytes(value).partition(b":")
            try:
                return int(sender), int(epoch)
            except ValueError:
                return None
    return None


def chunks(items: list[Any]) -> list[list[Any]]:
    """Split ``items`` into lists of at most :data:`MAX_ITEMS_PER_RECORD`."""
    n = MAX_ITEMS_PER_RECORD
    return [items] if len(items) <= n else [items[i : i + n] for i in range(0, len(items), n)]


def encode_ops(ops: list[list[Any]]) -> bytes:
    """One ``__acker`` record's value: a JSON list of ops (``schemas/acker-ops.schema.json``)."""
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
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError) as exc:
        raise DecodeError(f"{type(exc).__name__}: {exc}", component=component, topic=topic, partition=partition, offset=offset) from exc


def encode_results(results: list[list[Any]]) -> bytes:
    """One ``__ack_result`` record's value: a JSON list of ``[code, root, latency]`` or ``[1, root, latency, why]`` (``schemas/ack-result.schema.json``)."""
    return encode_json(results)


def why_text(component: str, text: str) -> str:
    """A fail's ``why`` as the wire carries it: ``[component] text``, cut to :data:`MAX_WHY_CHARS` characters.

    >>> why_text("check", "ZeroDivisionError: division by zero")
    '[check] ZeroDivisionError: division by zero'
    >>> len(why_text("check", "x" * 1000))
    300
    """
    why = f"[{component}] {text}"
    return why if len(why) <= MAX_WHY_CHARS else why[: MAX_WHY_CHARS - 3] + "..."


U64 = 1 << 64
_OP_LEN = {OP_INIT: 4, OP_ACK: 3, OP_FAIL: 2, OP_RESET: 2}
"""Items per op; a fail may carry one more, its ``why``."""


def _u64(x: Any) -> bool:
    return type(x) is int and 0 <= x < U64


def _op_problem(op: Any) -> str | None:
    """Why ``op`` is not a well-formed acker op (None if it is)."""
    if not isinstance(op, list) or not op or type(op[0]) is not int or op[0] not in _OP_LEN:
        return "not [code, root, ...] with a code 0..3"
    if op[0] == OP_FAIL and len(op) == 3:
        if type(op[2]) is not str or len(op[2]) > MAX_WHY_CHARS:
            return f"a fail's why must be a string of at most {MAX_WHY_CHARS} characters"
        return None if _u64(op[1]) else "root and ack val must be unsigned 64-bit integers"
    if len(op) != _OP_LEN[op[0]]:
        return f"op {op[0]} takes {_OP_LEN[op[0]]} items, got {len(op)}"
    if not all(_u64(x) for x in op[1:3]):
        return "root and ack val must be unsigned 64-bit integers"
    if op[0] == OP_INIT and not (type(op[3]) is int and 0 <= op[3] <= MAX_SPOUT_TASK):
        return f"the spout task must be an integer in 0..{MAX_SPOUT_TASK}"
    return None


def decode_ops(raw: bytes | None, *, component: str, topic: str, partition: int, offset: int) -> list[list[int]]:
    """Decode an acker input record and check every op's shape (codes, lengths, 64-bit ids).

    Raises:
      DecodeError: naming where the record came from and the first bad op; nothing of
        the record is applied (the caller dead-letters it whole).

    >>> decode_ops(b"[[0, 5, 9, 1], [1, 5, 9]]", component="__acker", topic="t", partition=0, offset=3)
    [[0, 5, 9, 1], [1, 5, 9]]
    >>> decode_ops(b"[[1, -5, 9]]", component="__acker", topic="t", partition=0, offset=3)
    Traceback (most recent call last):
    ...
    streams.exceptions.DecodeError: [__acker] cannot decode record t[0]@3: op 0: root and ack val must be unsigned 64-bit integers
    """
    ops = decode_list(raw, component=component, topic=topic, partition=partition, offset=offset)
    if not _ops_ok(ops):  # the fast check; on failure, find and name the first bad op
        for i, op in enumerate(ops):
            problem = _op_problem(op)
            if problem is not None:
                raise DecodeError(f"op {i}: {problem}", component=component, topic=topic, partition=partition, offset=offset)
    return ops


def _ops_ok(ops: list[Any]) -> bool:
    """Every op well-formed (the same rules as :func:`_op_problem`, inlined: ~0.2 us an op)."""
    lengths = _OP_LEN
    try:
        for op in ops:
            code = op[0]
            if type(code) is not int:
                return False
            if len(op) != lengths[code] and (code != OP_FAIL or len(op) != 3 or type(op[2]) is not str or len(op[2]) > MAX_WHY_CHARS):
                return False
            root = op[1]
            if type(root) is not int or root < 0 or root >= U64:
                return False
            if code <= OP_ACK:  # init and ack carry an ack val; an init also a spout task
                val = op[2]
                if type(val) is not int or val < 0 or val >= U64:
                    return False
                if code == OP_INIT and (type(op[3]) is not int or not 0 <= op[3] <= MAX_SPOUT_TASK):
                    return False
    except (KeyError, TypeError, IndexError):
        return False
    return True


def decode_results(raw: bytes | None, *, component: str, topic: str, partition: int, offset: int) -> list[tuple[int, int, float, str]]:
    """Decode an ack result record: ``[(code, root, latency_s, why), ...]`` (``why`` is ``""`` unless a failed tree's result said).

    Raises:
      DecodeError: naming where the record came from and the first bad result.

    >>> decode_results(b'[[0, 12, 0.25], [1, 13, 3.0, "[check] ValueError: bad"]]', component="lines", topic="r", partition=1, offset=0)
    [(0, 12, 0.25, ''), (1, 13, 3.0, '[check] ValueError: bad')]
    """
    items = decode_list(raw, component=component, topic=topic, partition=partition, offset=offset)
    if _results_ok(items):  # the fast check; on failure, find and name the first bad result
        return [(r[0], r[1], float(r[2]), r[3] if len(r) == 4 else "") for r in items]
    for i, r in enumerate(items):
        if not _results_ok([r]):
            raise DecodeError(
                f"result {i}: not [0|1|2, root, latency_s] or [1, root, latency_s, why]", component=component, topic=topic, partition=partition, offset=offset
            )
    raise AssertionError("unreachable: some result failed the check")  # pragma: no cover


def _results_ok(items: list[Any]) -> bool:
    """Every result well-formed: ``[code, root, latency_s]``, or a fail's ``[1, root, latency_s, why]``."""
    try:
        for r in items:
            if type(r) is not list:
                return False
            n = len(r)
            if n == 4:
                why = r[3]
                if r[0] != RESULT_FAIL or type(why) is not str or len(why) > MAX_WHY_CHARS:
                    return False
            elif n != 3:
                return False
            code, root, latency = r[0], r[1], r[2]
            if type(code) is not int or not 0 <= code <= RESULT_RESET or type(root) is not int or not 0 <= root < U64:
                return False
            if type(latency) is not float and type(latency) is not int:
                return False
    except TypeError:
        return False
    return True


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


def murmur2_root(root: int) -> int:
    """:func:`murmur2` of ``root.to_bytes(8, "big")``, unrolled for 8 bytes.

    About 3x faster: two 4-byte blocks, no tail.

    >>> all(murmur2_root(r) == murmur2(r.to_bytes(8, "big")) for r in (0, 1, 2**63 + 12345, 2**64 - 1))
    True
    """
    b = root.to_bytes(8, "big")
    k = (int.from_bytes(b[:4], "little") * _M) & _MASK
    k = ((k ^ (k >> 24)) * _M) & _MASK
    h = ((((_SEED ^ 8) * _M) & _MASK) ^ k) * _M & _MASK
    k = (int.from_bytes(b[4:], "little") * _M) & _MASK
    k = ((k ^ (k >> 24)) * _M) & _MASK
    h ^= k
    h ^= h >> 13
    h = (h * _M) & _MASK
    return h ^ (h >> 15)


def acker_partition(root: int, ackers: int) -> int:
    """The ``__acker`` partition (acker task) that owns ``root`` (a 64-bit unsigned id).

    Kafka's murmur2 of its 8-byte key, as the Java client's default partitioner would pick.
    """
    if ackers == 1:
        return 0
    return (murmur2_root(root) & 0x7FFFFFFF) % ackers


def root_key(root: int) -> bytes:
    """The record key of a root id: 8 bytes, big-endian."""
    return root.to_bytes(8, "big")
