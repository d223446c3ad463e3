"""Tuple envelope codec: the value of every record on a bolt's input topic.

Wire form (``schemas/tuple.schema.json``): a UTF-8 JSON array

    [2, stream, source_component, source_task, epoch, values, anchors]
    [2, stream, source_component, source_task, epoch, values, anchors, [txid, attempt]]
    [2, stream, source_component, source_task, epoch, values, anchors, null | [txid, attempt], [source, offset, path]]

where ``epoch`` is the sending task's life (its worker's claim epoch, milliseconds, larger
for every later owner of the task: :mod:`streams.runtime.fencing`; Kafka's producer epoch,
checked by the consumer), ``anchors`` is Storm's ``anchors_to_ids`` flattened as ``[root,
edge, root, edge, ...]`` (unsigned 64-bit integers), and the optional eighth item is the batch
a tuple of a transactional topology belongs to (Storm's ``TransactionAttempt``,
:mod:`streams.model.batch`). The optional ninth item, only in a topology with a stateful
bolt, is the tuple's id across replays (:mod:`streams.state.keyvalue`). Version 1 (no epoch;
a batch was ``[txid, attempt, epoch]``) is still read, as epoch 0. JSON keeps the format
readable from any language; the array form keeps it small. Never pickle. Encoding and
decoding use orjson (about 8x faster than the stdlib here, byte-identical output for these
shapes); integers must fit in 64 bits (signed or unsigned), as root and edge ids do.

A record may hold several tuples for the same partition (a pack: :func:`encode_pack`, read by
:func:`decode_tuples`; docs/design.md, "Packs"). A pack says each run of envelopes' shared head
once, ``[4, head, [item, ...], head, [item, ...], ...]``: ``head`` is ``[stream,
source_component, source_task, epoch]`` and an ``item`` the rest of an envelope, ``[values,
anchors]``, ``[values, anchors, batch]`` or ``[values, anchors, batch | null, tid]``. A word
count's words cost 55 bytes each in it, not 88. Packs of whole envelopes, ``[3, envelope,
envelope, ...]``, are still read.

A pack whose tuples were emitted in trees says each **run's root once**, ``[6, segment, ...]``
(:func:`encode_run`): a segment is either ``[head, root, edge, [values, values, ...]]``, the
tuples of one head in one tree (``root`` 0 and ``edge`` 0: untracked), with a fifth item
``[txid, attempt]`` when they belong to a transactional batch, or a whole envelope (a tuple
in several trees, or with an id). A run's tuples carry no edge ids of their
own: the sender XORed one edge id per run into the parent's ack val, and the reader XORs it
into the root's ack once, with the ack of the run's last tuple to be acked (:class:`RunAnchors`).
To the acker it is one more edge: the tree completes when every tuple of the run is acked,
and not before. A word count's words cost 10 bytes each in it, not 55, and neither side
draws, writes, parses or XORs an id per tuple. docs/design.md, "Runs".

An **epoch marker**, ``[5, source_component, [task, ...], epoch]``, is the first record a new
life of an executor writes to each partition it may write (:func:`encode_marker`): it holds no
tuple (:func:`decode_tuples` returns none), and tells the partition's reader that every later
record of those tasks in an older epoch is a replaced owner's (:mod:`streams.runtime.fencing`).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from streams.exceptions import DecodeError

VERSION = 2
PACK_VERSION = 3
"""A record of several whole envelopes, ``[3, envelope, envelope, ...]`` (written before version 4; still read)."""
HEADED_PACK_VERSION = 4
"""A record of several envelopes, each run's head said once: ``[4, head, [item, ...], ...]`` (:func:`encode_pack`)."""
EPOCH_MARKER_VERSION = 5
"""An epoch marker, ``[5, component, [task, ...], epoch]`` (:func:`encode_marker`)."""
ROOTED_PACK_VERSION = 6
"""A record of runs of tuples, each run's head, root and edge said once: ``[6, [head, root, edge, [values, ...]] | envelope, ...]`` (:func:`encode_run`)."""
_dumps = orjson.dumps
_loads = orjson.loads
_OPTS = orjson.OPT_NON_STR_KEYS
_U64 = 1 << 64


class RunAnchors(dict[int, int]):
    """The anchors of every tuple of one run (:func:`encode_run`), shared by them: ``{root: 0}``.

    ``edge`` is what the run's last ack owes: the run's edge id, XOR the ack vals (children's
    edges) of its tuples acked so far, and ``left`` how many of its tuples are not acked yet.
    The bolt's collector sends nothing for a tuple acked before the last, and ``edge`` XOR the
    last one's ack val with it, one op for the whole run
    (:meth:`streams.runtime.collectors.BoltOutputCollectorImpl.ack`). Every id is still in
    exactly two ops, as with Storm's one edge per tuple, so the tree completes when every tuple
    of the run and its children are acked, whatever order the ops arrive in, and not before.
    A fail fails the root, as for any tuple. The 0 in the map is the per-tuple edge the run
    does not have. Never mutated as a map.

    >>> a = RunAnchors(5, 9, 2)
    >>> dict(a), a.root, a.edge, a.left
    ({5: 0}, 5, 9, 2)
    """

    __slots__ = ("edge", "left", "root")

    def __init__(self, root: int, edge: int, left: int) -> None:
        super().__init__(((root, 0),))
        self.root = root
        self.edge = edge
        self.left = left


Envelope = tuple[str, str, int, int, list[Any], dict[int, int], tuple[int, int] | None, tuple[int, int, int] | None]
"""``(stream, source_component, source_task, epoch, values, anchors, batch, tid)``; ``batch`` is
``(txid, attempt)`` or None; ``tid`` is ``(source, offset, path)`` or None."""

Segment = tuple[str, str, int, int, dict[int, int], tuple[int, int] | None, tuple[int, int, int] | None, list[list[Any]]]
"""``(stream, source_component, source_task, epoch, anchors, batch, tid, [values, ...])``: the
tuples of one run (:func:`encode_run`), or one envelope's tuple; its tuples share every field but
their values (:func:`decode_runs`)."""


def encode_tuple(
    stream: str,
    component: str,
    task: int,
    values: list[Any],
    anchors: dict[int, int],
    batch: tuple[int, int] | None = None,
    tid: tuple[int, int, int] | None = None,
    *,
    epoch: int,
) -> bytes:
    """Encode one tuple envelope; ``epoch`` is the sending task's life (an integer >= 0).

    Raises ``TypeError`` for values JSON cannot hold (including integers beyond 64 bits).
    """
    flat: list[int] = []
    for root, edge in anchors.items():
        flat.append(root)
        flat.append(edge)
    if tid is not None:
        return _dumps([VERSION, stream, component, task, epoch, values, flat, None if batch is None else [batch[0], batch[1]], list(tid)])
    if batch is None:
        return _dumps([VERSION, stream, component, task, epoch, values, flat])
    return _dumps([VERSION, stream, component, task, epoch, values, flat, [batch[0], batch[1]]])


def encode_rooted(
    stream: str, component: str, task: int, epoch: int, values: list[Any], root: int, edge: int, tid: tuple[int, int, int] | None = None
) -> bytes:
    """:func:`encode_tuple` of a tuple in one tree, ``anchors == {root: edge}``, and no batch.

    The same bytes, without building the map (the hot path of an anchored emit).
    """
    if tid is not None:
        return _dumps([VERSION, stream, component, task, epoch, values, [root, edge], None, list(tid)])
    return _dumps([VERSION, stream, component, task, epoch, values, [root, edge]])


def encode_batched(stream: str, component: str, task: int, epoch: int, values: list[Any], root: int, edge: int, batch: tuple[int, int]) -> bytes:
    """:func:`encode_tuple` of a tuple in one tree of a transactional batch, ``anchors == {root: edge}``, no tuple id.

    The same bytes, without building the map (the hot path of a transactional topology's emits).
    """
    return _dumps([VERSION, stream, component, task, epoch, values, [root, edge], [batch[0], batch[1]]])


def decode_tuple(raw: bytes | None, *, component: str, topic: str, partition: int, offset: int) -> Envelope:
    """Decode an envelope into ``(stream, source_component, source_task, epoch, values, anchors, batch, tid)``.

    Raises :class:`DecodeError` (naming component, topic, partition, offset) on any
    malformed record, so the caller can dead-letter it. A pack of several tuples is a
    malformed tuple here: a bolt's input reads :func:`decode_tuples`.
    """
    try:
        if raw is None:
            raise ValueError("null value")
        return _decode_msg(_loads(raw))
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError) as exc:
        raise DecodeError(str(exc), component=component, topic=topic, partition=partition, offset=offset) from exc


def decode_tuples(raw: bytes | None, *, component: str, topic: str, partition: int, offset: int) -> list[Envelope]:
    """The tuples of one input record: one for an envelope, each one of a pack (:func:`encode_pack`) in order.

    All or nothing: raises :class:`DecodeError` (naming component, topic, partition, offset)
    if the record, or any envelope in it, is malformed, so the caller dead-letters the record.
    """
    return [
        (stream, source, task, epoch, values, anchors, batch, tid)
        for stream, source, task, epoch, anchors, batch, tid, items in decode_runs(raw, component=component, topic=topic, partition=partition, offset=offset)
        for values in items
    ]


def decode_runs(raw: bytes | None, *, component: str, topic: str, partition: int, offset: int) -> list[Segment]:
    """The tuples of one input record grouped as they came: a run's tuples in one :data:`Segment`, an envelope's tuple alone in one.

    :func:`decode_tuples` without a tuple of fields per tuple: a bolt executor builds each
    :class:`~streams.model.tuple.Tuple` of a run from the run's shared fields
    (:func:`streams.runtime.bolt_task.record_tuples`). Raises :class:`DecodeError` as
    :func:`decode_tuples` does (all or nothing).

    >>> head = encode_head("default", "split", 3, 7)
    >>> raw = b"[6," + encode_run(head, 5, 9, [encode_values(["a"]), encode_values(["b"])]) + b"]"
    >>> [(s[0], s[2], s[-1]) for s in decode_runs(raw, component="count", topic="t", partition=0, offset=0)]
    [('default', 3, [['a'], ['b']])]
    """
    try:
        if raw is None:
            raise ValueError("null value")
        msg = _loads(raw)
        if type(msg) is list and msg:
            if msg[0] == ROOTED_PACK_VERSION:
                return _decode_rooted(msg)
            if msg[0] == HEADED_PACK_VERSION:
                return [_alone(e) for e in _decode_headed(msg)]
            if msg[0] == EPOCH_MARKER_VERSION:
                _marker_fields(msg)
                return []
            if msg[0] == PACK_VERSION:
                if len(msg) < 2:
                    raise ValueError("a pack holds at least one envelope")
                return [_alone(_decode_msg(m)) for m in msg[1:]]
        return [_alone(_decode_msg(msg))]
    except (ValueError, TypeError, UnicodeDecodeError, RecursionError) as exc:
        raise DecodeError(str(exc), component=component, topic=topic, partition=partition, offset=offset) from exc


def _alone(e: Envelope) -> Segment:
    """One envelope's tuple as a segment of its own."""
    return e[0], e[1], e[2], e[3], e[5], e[6], e[7], [e[4]]


def encode_head(stream: str, component: str, task: int, epoch: int) -> bytes:
    """The head of a run, ``[stream, component, task, epoch]`` (:func:`encode_run`); a task says it once per stream."""
    return _dumps([stream, component, task, epoch])


def encode_values(values: list[Any]) -> bytes:
    """A tuple's values as a run holds them (:func:`encode_run`). Raises ``TypeError`` for values JSON cannot hold."""
    return _dumps(values)


def encode_run(head: bytes, root: int, edge: int, values: list[bytes], batch: tuple[int, int] | None = None) -> bytes:
    """One segment of a version 6 pack: the tuples ``values`` (each :func:`encode_values`) of ``head`` in tree ``root``.

    ``edge`` is the one edge id the sender XORed into the parent's ack val for the whole run
    (0 with ``root`` 0: untracked tuples); ``batch`` the ``(txid, attempt)`` all of them belong
    to in a transactional topology (a fifth item). A pack is ``b"[6," + b",".join(segments) + b"]"``;
    a segment may also be a whole envelope.

    >>> head = encode_head("default", "split", 3, 7)
    >>> raw = b"[6," + encode_run(head, 5, 9, [encode_values(["a"]), encode_values(["b"])]) + b"]"; raw
    b'[6,[["default","split",3,7],5,9,[["a"],["b"]]]]'
    >>> ts = decode_tuples(raw, component="count", topic="t", partition=0, offset=0)
    >>> [t[4] for t in ts], [dict(t[5]) for t in ts], ts[0][5] is ts[1][5], ts[0][5].edge, ts[0][5].left
    ([['a'], ['b']], [{5: 0}, {5: 0}], True, 9, 2)
    """
    tail = b"]]" if batch is None else b"],[%d,%d]]" % batch
    return b"[" + head + b"," + str(root).encode() + b"," + str(edge).encode() + b",[" + b",".join(values) + tail


def run_envelope(head: bytes, root: int, edge: int, values: bytes, batch: tuple[int, int] | None = None) -> bytes:
    """The envelope of a run of one tuple: the bytes :func:`encode_tuple` writes for it (``root`` 0: untracked).

    >>> run_envelope(encode_head("default", "split", 3, 7), 5, 9, encode_values(["a"])) == encode_rooted("default", "split", 3, 7, ["a"], 5, 9)
    True
    >>> run_envelope(encode_head("default", "split", 3, 7), 5, 9, encode_values(["a"]), (4, 1)) == encode_batched("default", "split", 3, 7, ["a"], 5, 9, (4, 1))
    True
    """
    anchors = b"[" + str(root).encode() + b"," + str(edge).encode() + b"]" if root else b"[]"
    tail = b"]" if batch is None else b",[%d,%d]]" % batch
    return b"[2," + head[1:-1] + b"," + values + b"," + anchors + tail


def _decode_rooted(msg: list[Any]) -> list[Segment]:
    """The segments of a version 6 pack, in order; a run's tuples share one :class:`RunAnchors` (untracked: one empty map). Raises ValueError or TypeError."""
    if len(msg) < 2:
        raise ValueError("a version 6 pack holds at least one segment")
    out: list[Segment] = []
    for seg in msg[1:]:
        if type(seg) is not list or not seg:
            raise ValueError("a version 6 pack's segment is a run [head, root, edge, [values, ...]] or an envelope")
        if type(seg[0]) is not list:
            out.append(_alone(_decode_msg(seg)))
            continue
        if len(seg) == 4:
            head, root, edge, items = seg
            batch = None
        elif len(seg) == 5:
            head, root, edge, items, raw_batch = seg
            if raw_batch is None:
                batch = None
            elif type(raw_batch) is not list or len(raw_batch) != 2 or type(raw_batch[0]) is not int or type(raw_batch[1]) is not int:
                raise ValueError("a run's batch is [txid, attempt] or null")
            else:
                batch = (raw_batch[0], raw_batch[1])
        else:
            raise ValueError("a run is [head, root, edge, [values, ...]] or [head, root, edge, [values, ...], [txid, attempt]]")
        if len(head) != 4 or type(items) is not list or not items:
            raise ValueError("a run is [[stream, component, task, epoch], root, edge, [values, ...]] with at least one tuple")
        stream, source, task, epoch = head
        if type(stream) is not str or type(source) is not str or type(task) is not int or type(epoch) is not int or not 0 <= epoch < _U64:
            raise ValueError("a run's head has the wrong types: [stream, component, task, epoch]")
        if type(root) is not int or type(edge) is not int or not 0 <= root < _U64 or not 0 <= edge < _U64 or (root == 0) != (edge == 0):
            raise ValueError("a run's root and edge are unsigned 64-bit ids, both 0 when untracked")
        for values in items:
            if type(values) is not list:
                raise ValueError("a run's tuple is its values, a list")
        out.append((stream, source, task, epoch, RunAnchors(root, edge, len(items)) if root else {}, batch, None, items))
    return out


def encode_marker(component: str, tasks: list[int], epoch: int) -> bytes:
    """An epoch marker: ``component``'s ``tasks`` write in life ``epoch`` from here on (no tuple in it).

    >>> raw = encode_marker("split", [3, 4], 1764232345123); raw
    b'[5,"split",[3,4],1764232345123]'
    >>> decode_marker(raw), decode_tuples(raw, component="count", topic="t", partition=0, offset=0)
    (('split', [3, 4], 1764232345123), [])
    """
    return _dumps([EPOCH_MARKER_VERSION, component, tasks, epoch])


def decode_marker(raw: bytes | None) -> tuple[str, list[int], int] | None:
    """``(component, tasks, epoch)`` of an epoch marker; None for any other record (a tuple, a pack, or not Squall's)."""
    if not raw or not raw.startswith(b"[5,"):
        return None
    try:
        return _marker_fields(_loads(raw))
    except (ValueError, TypeError):
        return None


def _marker_fields(msg: list[Any]) -> tuple[str, list[int], int]:
    """A parsed marker's fields; raises ValueError for a malformed one."""
    if len(msg) != 4:
        raise ValueError("an epoch marker is [5, component, [task, ...], epoch]")
    _, component, tasks, epoch = msg
    if type(component) is not str or type(tasks) is not list or not all(type(t) is int for t in tasks) or type(epoch) is not int or not 0 <= epoch < _U64:
        raise ValueError("an epoch marker has the wrong types: [5, component, [task, ...], epoch]")
    return component, tasks, epoch


def encode_pack(envelopes: list[bytes]) -> bytes:
    """One record holding several encoded envelopes, in order: ``[4, head, [item, ...], head, [item, ...], ...]``.

    Storm batches the tuples one worker sends another (``topology.transfer.batch.size``);
    Squall packs the tuples a task sends one partition of a bolt's topic between two flushes,
    so a word count's words cost one Kafka record a flush, not one each (docs/design.md, "Packs").
    Consecutive envelopes with the same head (stream, component, task, epoch: the same bytes
    up to the values) share it; each item is the rest of its envelope. The envelopes are cut
    and joined as bytes, not encoded again. One envelope is returned as it is; envelopes whose
    head cannot be cut (not version 2) go in a pack of whole envelopes, ``[3, ...]``.

    >>> a = encode_rooted("default", "split", 0, 7, ["a"], 1, 2)
    >>> b = encode_rooted("default", "split", 0, 7, ["b"], 1, 3)
    >>> encode_pack([a, b])
    b'[4,["default","split",0,7],[[["a"],[1,2]],[["b"],[1,3]]]]'
    >>> [t[4] for t in decode_tuples(encode_pack([a, b]), component="count", topic="t", partition=0, offset=0)]
    [['a'], ['b']]
    """
    if len(envelopes) == 1:
        return envelopes[0]
    out = [b"[4"]
    head = b""
    items: list[bytes] = []
    for env in envelopes:
        if not (head and env.startswith(head)):
            end = _head_end(env)
            if end < 0:
                return b"[3," + b",".join(envelopes) + b"]"
            if items:
                out.append(b"[" + head[3:-1] + b"],[" + b",".join(items) + b"]")
                items = []
            head = env[:end]
        items.append(b"[" + env[len(head) :])
    out.append(b"[" + head[3:-1] + b"],[" + b",".join(items) + b"]")
    return b",".join(out) + b"]"


def _head_end(env: bytes) -> int:
    """Where a version 2 envelope's head ends: the index just past the comma after its epoch (-1: not one).

    The head is ``[2,"stream","component",task,epoch,``; the strings are JSON (a quote inside
    one is escaped), the integers have no comma in them.
    """
    if not env.startswith(b'[2,"'):
        return -1
    i = 4
    for n in range(2):  # the stream's and the component's closing quotes
        while True:
            j = env.find(b'"', i)
            if j < 0:
                return -1
            k = j - 1
            while env[k] == 0x5C:  # a backslash: the quote is escaped if an odd number precede it
                k -= 1
            if (j - 1 - k) % 2 == 0:
                break
            i = j + 1
        i = j + 1
        if n == 0:
            if env[i : i + 2] != b',"':
                return -1
            i += 2
    after_task = env.find(b",", i + 1)
    after_epoch = env.find(b",", after_task + 1) if after_task > 0 else -1
    return after_epoch + 1 if after_epoch > 0 else -1


def _decode_headed(msg: list[Any]) -> list[Envelope]:
    """The envelopes of a version 4 pack, ``[4, head, [item, ...], ...]``, in order. Raises ValueError or TypeError."""
    n = len(msg)
    if n < 3 or n % 2 == 0:
        raise ValueError("a pack is [4, head, [item, ...], ...] with at least one run")
    out: list[Envelope] = []
    for i in range(1, n, 2):
        head, items = msg[i], msg[i + 1]
        if type(head) is not list or len(head) != 4 or type(items) is not list or not items:
            raise ValueError("a pack's run is a head [stream, component, task, epoch] and a non-empty list of items")
        stream, source, task, epoch = head
        if type(stream) is not str or type(source) is not str or type(task) is not int or type(epoch) is not int or not 0 <= epoch < _U64:
            raise ValueError("a pack's head has the wrong types: [stream, component, task, epoch]")
        for item in items:
            # The common item: [values, [root, edge]] (a tuple in one tree, no batch, no id).
            if type(item) is list and len(item) == 2:
                values, flat = item
                if type(values) is list and type(flat) is list and len(flat) == 2:
                    r, e = flat
                    if type(r) is int and type(e) is int and 0 <= r < _U64 and 0 <= e < _U64:
                        out.append((stream, source, task, epoch, values, {r: e}, None, None))
                        continue
            if type(item) is not list or not 2 <= len(item) <= 4:
                raise ValueError("a pack's item is [values, anchors], [values, anchors, batch] or [values, anchors, batch | null, tid]")
            out.append(_decode_msg([VERSION, stream, source, task, epoch, *item]))
    return out


def _decode_msg(msg: Any) -> Envelope:
    """A parsed envelope's fields (the hot path of :func:`decode_tuple`). Raises ValueError or TypeError."""
    # Fast path: the common well-formed shapes (no batch; no anchors or one root; a stateful
    # topology's one root and id; a transactional batch's tuple in one tree), checked with
    # exact types; anything else takes the full checks.
    if type(msg) is list and ((n := len(msg)) == 7 or (n == 9 and msg[7] is None) or n == 8):
        version, stream, source, task, epoch, values, flat = msg[0], msg[1], msg[2], msg[3], msg[4], msg[5], msg[6]
        if (
            version == VERSION
            and type(stream) is str
            and type(source) is str
            and type(task) is int
            and type(epoch) is int
            and epoch >= 0
            and type(values) is list
            and type(flat) is list
        ):
            if n == 7 and not flat:
                return stream, source, task, epoch, values, {}, None, None
            if len(flat) == 2:
                r, e = flat
                if type(r) is int and type(e) is int and 0 <= r < _U64 and 0 <= e < _U64:
                    if n == 7:
                        return stream, source, task, epoch, values, {r: e}, None, None
                    if n == 8:
                        raw_batch = msg[7]
                        if type(raw_batch) is list and len(raw_batch) == 2:
                            txid, attempt = raw_batch
                            if type(txid) is int and type(attempt) is int:
                                return stream, source, task, epoch, values, {r: e}, (txid, attempt), None
                        return _decode_checked(msg)
                    raw_id = msg[8]
                    if type(raw_id) is list and len(raw_id) == 3:
                        a, b, c = raw_id
                        if type(a) is int and type(b) is int and type(c) is int and 0 <= a < _U64 and 0 <= b < _U64 and 0 <= c < _U64:
                            return stream, source, task, epoch, values, {r: e}, None, (a, b, c)
    return _decode_checked(msg)


def _decode_checked(msg: Any) -> Envelope:
    """The general path of :func:`decode_tuple` (every shape, versions 1 and 2, full checks). Raises ValueError."""
    if not isinstance(msg, list) or not msg:
        raise ValueError("an envelope is a JSON array")
    version = msg[0]
    if version == VERSION:
        if len(msg) not in (7, 8, 9):
            raise ValueError("a version 2 envelope is an array of 7, 8 or 9 items")
        _, stream, source, task, epoch, values, flat = msg[:7]
        rest = msg[7:]
        batch_items = 2
    elif version == 1:  # written before epochs: epoch 0, a batch [txid, attempt, epoch]
        if len(msg) not in (6, 7, 8):
            raise ValueError("a version 1 envelope is an array of 6, 7 or 8 items")
        _, stream, source, task, values, flat = msg[:6]
        epoch = msg[6][2] if len(msg) >= 7 and isinstance(msg[6], list) and len(msg[6]) == 3 else 0
        rest = msg[6:]
        batch_items = 3
    elif version == PACK_VERSION:
        raise ValueError("a pack of tuples inside a pack, or where one tuple was expected")
    else:
        raise ValueError(f"unknown envelope version {version!r}")
    if type(epoch) is not int or not 0 <= epoch < _U64:
        raise ValueError("the epoch must be an unsigned 64-bit integer")
    if not isinstance(values, list) or not isinstance(flat, list) or len(flat) % 2:
        raise ValueError("values/anchors have the wrong shape")
    if not isinstance(stream, str) or not isinstance(source, str) or not isinstance(task, int):
        raise ValueError("stream, source and task have the wrong types")
    for x in flat:
        if type(x) is not int or not 0 <= x < _U64:
            raise ValueError("anchors must be unsigned 64-bit integers")
    n = len(flat)
    if n == 2:  # the common case: one root (a tuple anchored to one tree)
        anchors = {flat[0]: flat[1]}
    elif n == 0:
        anchors = {}
    else:
        anchors = dict(zip(flat[::2], flat[1::2], strict=True))
    batch: tuple[int, int] | None = None
    if rest and not (len(rest) == 2 and rest[0] is None):
        raw_batch = rest[0]
        if not isinstance(raw_batch, list) or len(raw_batch) != batch_items or not all(isinstance(x, int) for x in raw_batch):
            raise ValueError("batch must be [txid, attempt]" if batch_items == 2 else "batch must be [txid, attempt, epoch]")
        batch = (raw_batch[0], raw_batch[1])
    tid: tuple[int, int, int] | None = None
    if len(rest) == 2:
        raw_tid = rest[1]
        if not isinstance(raw_tid, list) or len(raw_tid) != 3 or not all(type(x) is int and 0 <= x < _U64 for x in raw_tid):
            raise ValueError("a tuple id must be [source, offset, path] (unsigned integers)")
        tid = (raw_tid[0], raw_tid[1], raw_tid[2])
    return stream, source, task, epoch, values, anchors, batch, tid


def exact(raw: bytes) -> bytes:
    """``raw`` copied into a buffer of its own size: for an encoded value that is kept, not sent at once.

    orjson (3.13) returns its output in the 4 KiB buffer it wrote it to, so a value kept for a
    batch holds 4 KiB: 100,000 kept values hold 400 MB (a SparkBolt's micro-batch of output
    rows, a transactional sink's batch, an acker flush). In a fresh process, where the
    allocator must fault those pages in, 500 word-count envelopes kept and joined also took
    1.82 us a tuple, against 0.24 us with this copy (``timeit``, 2026-11-30); in a worker's
    executor loop, which reuses its heap, the per-round packs showed no difference, so they
    are not copied. A value sent at once (``Producer.produce`` copies it) needs no copy.

    >>> exact(b'["a",1]')
    b'["a",1]'
    """
    return bytes(memoryview(raw))


def encode_json(obj: Any) -> bytes:
    """Compact UTF-8 JSON (non-string dict keys become strings, as the stdlib does)."""
    return _dumps(obj, option=_OPTS)


def encode_state(value: Any) -> str:
    """A state row's value as compact JSON text (orjson; the stdlib's ``json.loads`` reads it back).

    Integers beyond 64 bits, which orjson refuses, go through the stdlib. A non-finite float
    (NaN, infinity) is written as ``null``, as JSON has none. Raises ``TypeError`` for a value
    JSON cannot hold.
    """
    try:
        return _dumps(value, option=_OPTS).decode()
    except TypeError:
        return json.dumps(value)


def decode_json(raw: bytes | str) -> Any:
    """Parse JSON. Raises ``ValueError`` (orjson.JSONDecodeError) on bad input."""
    return _loads(raw)
