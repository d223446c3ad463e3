"""Packs (:mod:`streams.runtime.transfer`): the tuples a task sends one bolt partition travel in one record,
in order, bounded, and are executed one by one before the bolt moves past the record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.config import resolve
from streams.exceptions import DecodeError
from streams.model.loader import load_topology
from streams.runtime.acks import AckBuffer
from streams.runtime.bolt import BoltExecutor
from streams.runtime.executor import ExecutorEnv
from streams.runtime.transfer import TupleTransfer
from streams.testing.memlog import Record
from streams.wire.codec import RunAnchors, decode_tuple, decode_tuples, encode_head, encode_pack, encode_rooted, encode_tuple, encode_values
from tests.unit.sim import Capture, as_tuples, collector

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
BOLTS = ("squall.t.split", "squall.t.count")
WHERE: dict[str, Any] = {"component": "count", "topic": "squall.t.count", "partition": 2, "offset": 41}

sends = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(BOLTS), st.integers(0, 3), st.text(max_size=30)),  # a tuple for a bolt's task
        st.tuples(st.just("out"), st.integers(-1, 1), st.text(max_size=5)),  # not a bolt's topic: straight through
        st.just("flush"),  # the executor's round ends
    ),
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(sends, st.integers(1, 6), st.integers(1, 400))
def test_every_tuple_arrives_once_in_its_partitions_order_in_bounded_packs(steps: list[Any], max_tuples: int, max_bytes: int) -> None:
    sent: list[tuple[str, bytes, int]] = []
    transfer = TupleTransfer(
        lambda topic, value, key=None, partition=-1: sent.append((topic, value, partition)), BOLTS, max_tuples=max_tuples, max_bytes=max_bytes
    )
    wanted: dict[tuple[str, int], list[str]] = {}
    passed: list[bytes] = []
    for n, step in enumerate(steps):
        if step == "flush":
            transfer.flush()
            assert len(transfer) == 0
            continue
        topic, partition, word = step
        value = encode_rooted("default", "split", 1, 9, [word], n + 1, 7)
        transfer.produce(topic, value, partition=partition)
        if topic in BOLTS:
            wanted.setdefault((topic, partition), []).append(word)
        else:
            passed.append(value)
    transfer.flush()
    got: dict[tuple[str, int], list[str]] = {}
    for topic, value, partition in sent:
        if topic not in BOLTS:
            continue
        envs = decode_tuples(value, **WHERE)
        assert len(envs) <= max_tuples
        assert len(envs) == 1 or sum(len(encode_rooted(*e[:3], e[3], e[4], *next(iter(e[5].items())))) for e in envs[:-1]) < max_bytes  # full only at its bound
        got.setdefault((topic, partition), []).extend(e[4][0] for e in envs)
    assert got == wanted
    assert [v for t, v, _ in sent if t not in BOLTS] == passed  # other records untouched, in order


def test_a_pack_decodes_to_its_envelopes_in_order_and_one_tuple_is_not_packed() -> None:
    a, b = encode_rooted("default", "split", 1, 9, ["to"], 11, 5), encode_rooted("default", "split", 1, 9, ["be"], 12, 6)
    assert encode_pack([a]) == a
    assert decode_tuples(encode_pack([a, b]), **WHERE) == [decode_tuple(a, **WHERE), decode_tuple(b, **WHERE)]
    assert decode_tuples(a, **WHERE) == [decode_tuple(a, **WHERE)]


U64 = st.integers(0, 2**64 - 1)
NAMES = st.one_of(st.sampled_from(["default", "split", "__tick"]), st.text(max_size=6))  # quotes, backslashes, commas, non-ASCII
envelopes = st.lists(
    st.tuples(
        st.sampled_from([("default", "split", 3, 9), ("default", "split", 4, 9), ("errors", "split", 3, 9)])
        | st.tuples(NAMES, NAMES, st.integers(-1, 99), U64),
        st.lists(st.one_of(st.text(max_size=8), st.integers(-5, 5), st.none()), max_size=3),
        st.dictionaries(U64, U64, max_size=2),
        st.none() | st.tuples(st.integers(1, 99), st.integers(1, 5)),
        st.none() | st.tuples(U64, U64, U64),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(envelopes)
def test_a_pack_decodes_to_what_each_envelope_decodes_to_alone(specs: list[Any]) -> None:
    """Whatever the heads (runs that share one, names with quotes and backslashes) and items
    (anchors, batches, ids): the pack is exactly its envelopes, in order."""
    encoded = [encode_tuple(s, c, t, v, a, b, i, epoch=e) for (s, c, t, e), v, a, b, i in specs]
    assert decode_tuples(encode_pack(encoded), **WHERE) == [decode_tuple(x, **WHERE) for x in encoded]


def test_a_pack_says_a_run_s_head_once_and_a_word_costs_little_more_than_its_values_and_ids() -> None:
    """A word count's pack: the stream, component, task and epoch once per run; about 55 bytes a
    word with two 64-bit ids in it, where whole envelopes cost 88."""
    words = [encode_rooted("default", "split", 3, 1_764_400_000_000, [w], 2**64 - 1 - n, 2**63 + n) for n, w in enumerate(["to", "be", "or", "not"] * 25)]
    other = encode_rooted("errors", "split", 3, 1_764_400_000_000, ["x"], 1, 2)
    pack = encode_pack([*words[:50], other, *words[50:]])
    assert pack.count(b'"default","split",3,1764400000000') == 2 and pack.count(b'"errors"') == 1
    assert len(pack) < 0.65 * len(b"[3," + b",".join([*words, other]) + b"]")
    assert (len(pack) - 3 * 40) / 101 < 56


@pytest.mark.parametrize(
    "raw",
    [
        b"[3]",
        b'[3,[2,"s","c",0,-5,[],[]]]',
        b"[3," + encode_pack([b'[2,"s","c",0,5,[],[]]', b'[2,"s","c",0,5,[],[]]']) + b"]",
        b"[4]",
        b'[4,["s","c",0,5]]',
        b'[4,["s","c",0,-5],[[[],[]]]]',
        b'[4,["s","c",0,5],[]]',
        b'[4,["s","c",0,5],[[[],[1]]]]',
        b'[4,["s",1,0,5],[[[],[]]]]',
        b'[4,["s","c",0,5],[[[],[]],[[],[],[1]]]]',
        b"[6]",
        b"[6,5]",
        b"[6,[]]",
        b'[6,[["s","c",0,5],1,0,[[]]]]',
        b'[6,[["s","c",0,5],0,2,[[]]]]',
        b'[6,[["s","c",0,5],-1,2,[[]]]]',
        b'[6,[["s","c",0,5],1,2,[]]]',
        b'[6,[["s","c",0,5],1,2,[5]]]',
        b'[6,[["s","c",0,-5],1,2,[[]]]]',
        b'[6,[["s","c",0],1,2,[[]]]]',
        b'[6,[["s","c",0,5],1,2]]',
        b'[6,[["s","c",0,5],1,2,[[]]],[2,"s","c",0,-5,[],[]]]',
        b'[6,[["s","c",0,5],1,2,[[]],[4]]]',
        b'[6,[["s","c",0,5],1,2,[[]],[4,1],5]]',
    ],
    ids=[
        "empty",
        "a bad envelope",
        "a pack in a pack",
        "4: empty",
        "4: a head alone",
        "4: a negative epoch",
        "4: no items",
        "4: an odd anchor",
        "4: a bad head",
        "4: a bad batch",
        "6: no segment",
        "6: a segment not a list",
        "6: an empty segment",
        "6: a root without an edge",
        "6: an edge without a root",
        "6: a negative root",
        "6: a run of no tuple",
        "6: values not a list",
        "6: a negative epoch",
        "6: a short head",
        "6: a run without its tuples",
        "6: a bad envelope after a run",
        "6: a short batch",
        "6: a run too long",
    ],
)
def test_a_malformed_pack_is_a_decode_error_naming_the_record(raw: bytes) -> None:
    with pytest.raises(DecodeError, match=r"^\[count\] cannot decode record squall.t.count\[2\]@41"):
        decode_tuples(raw, **WHERE)
    with pytest.raises(DecodeError):  # where one tuple is expected, a pack is not one
        decode_tuple(encode_pack([b'[2,"s","c",0,5,[],[]]', b'[2,"s","c",0,5,[],[]]']), **WHERE)


def split_executor() -> tuple[BoltExecutor, list[tuple[str, bytes | None, int]]]:
    topology = load_topology(EXAMPLES / "wordcount.py", "packs")
    ex = BoltExecutor(ExecutorEnv(topology=topology, component="split", conf=resolve(topology.conf), bootstrap="127.0.0.1:1", workdir=Path("/tmp")))
    sent: list[tuple[str, bytes | None, int]] = []
    ex.produce = ex.transfer.send = lambda topic, value, key=None, partition=-1, **kw: sent.append((topic, value, partition))
    ex.by_partition[0] = ex._new_task(0)
    return ex, sent


def test_a_bolt_executes_every_tuple_of_a_pack_then_moves_past_its_record() -> None:
    ex, sent = split_executor()
    lines = [encode_rooted("default", "lines", 0, 1, [text], root, 77) for text, root in (("to be", 1), ("or not", 2), ("to be", 3))]
    ex._process(Record(ex.topic, 0, 40, encode_pack(lines)))
    assert ex.by_partition[0].next_offset == 41 and ex.records_read == 1 and ex.tuples_read == 3
    assert ex.acks is not None and set(ex.acks.acks) == {1, 2, 3}  # each line acked, its words anchored
    ex.transfer.flush()
    words = [e[4][0] for t, v, p in sent if t in ex.topology.bolt_topics for e in decode_tuples(v, component="count", topic=t, partition=p, offset=0)]
    assert sorted(words) == sorted(["to", "be", "or", "not", "to", "be"])
    assert len(sent) == len({p for _, _, p in sent}) < 6  # a record per count task the words went to, not one per word
    assert ex._records_wanted() == max(1, ex.conf.batch_size // 3)  # a consume call asks for about squall.consume.batch tuples


def test_a_pack_with_a_bad_envelope_is_dead_lettered_whole_and_nothing_of_it_executes() -> None:
    ex, sent = split_executor()
    good = encode_rooted("default", "lines", 0, 1, ["to be"], 1, 77)
    ex._process(Record(ex.topic, 0, 7, b"[3," + good + b',[2,"s","c",0,-5,[],[]]]'))
    assert ex.by_partition[0].next_offset == 8 and ex.acks is not None and not ex.acks.acks
    dead = [t for t, _, _ in sent if t.endswith(".__dlq")]
    assert len(dead) == 1 and ex.stats.counters["poison"] == 1


def test_transfer_batch_size_one_sends_a_record_per_tuple() -> None:
    topology = load_topology(EXAMPLES / "wordcount.py", "packs")
    conf = resolve(topology.conf, {"squall.transfer.batch.size": 1})
    ex = BoltExecutor(ExecutorEnv(topology=topology, component="split", conf=conf, bootstrap="127.0.0.1:1", workdir=Path("/tmp")))
    sent: list[bytes | None] = []
    ex.produce = ex.transfer.send = lambda topic, value, key=None, partition=-1, **kw: sent.append(value)
    ex.by_partition[0] = ex._new_task(0)
    ex._process(Record(ex.topic, 0, 0, encode_rooted("default", "lines", 0, 1, ["to be or not"], 1, 77)))
    assert len(sent) == 4 and all(v is not None and v.startswith(b"[2,") for v in sent)  # sent at once, one envelope each


runs = st.lists(
    st.one_of(
        st.tuples(
            st.sampled_from(BOLTS),
            st.integers(0, 2),
            st.sampled_from(["default", "other"]),
            st.integers(0, 3),
            st.text(max_size=8),
            st.sampled_from([None, (4, 1), (5, 1)]),
        ),  # root 0: untracked; a batch or none
        st.tuples(st.sampled_from(BOLTS), st.integers(0, 2)),  # a whole envelope (a tuple in two trees) breaks the run
        st.tuples(st.just("out"), st.integers(0, 2), st.just("default"), st.integers(1, 3), st.text(max_size=8), st.just(None)),  # not a bolt's topic
        st.just("flush"),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(runs, st.integers(1, 6))
def test_runs_keep_order_and_say_each_edge_once_as_the_emitters_xored_it(steps: list[Any], max_tuples: int) -> None:
    """Tuples sent with ``emit_run`` arrive in their partition's order; per root, the edges the
    emitters XORed (what ``emit_run`` returned) are exactly the runs' edges the readers ack, and
    a run's tuples share one :class:`RunAnchors` counting them (untracked tuples: no anchors)."""
    sent: list[tuple[str, bytes, int]] = []
    transfer = TupleTransfer(lambda topic, value, key=None, partition=-1: sent.append((topic, value, partition)), BOLTS, max_tuples=max_tuples)
    wanted: dict[tuple[str, int], list[Any]] = {}
    xored: dict[int, int] = {}
    for step in steps:
        if step == "flush":
            transfer.flush()
            continue
        if len(step) == 2:
            topic, partition = step
            transfer.produce(topic, encode_tuple("default", "split", 1, ["two trees"], {7: 11, 8: 13}, epoch=9), partition=partition)
            xored[7] = xored.get(7, 0) ^ 11
            xored[8] = xored.get(8, 0) ^ 13
            wanted.setdefault((topic, partition), []).append(("two trees", None))
            continue
        topic, partition, stream, root, word, batch = step
        if not root:
            batch = None  # the collectors send an untracked batch tuple as an envelope
        edge = transfer.emit_run(topic, partition, encode_head(stream, "split", 1, 9), root, encode_values([word]), batch)
        if root:
            xored[root] = xored.get(root, 0) ^ edge
        else:
            assert edge == 0  # untracked: never an edge
        wanted.setdefault((topic, partition), []).append((word, batch))
    transfer.flush()
    got: dict[tuple[str, int], list[Any]] = {}
    acked: dict[int, int] = {}
    for topic, value, partition in sent:
        envs = decode_tuples(value, **WHERE)
        assert len(envs) <= max_tuples or topic == "out"
        seen: set[int] = set()
        for stream, _source, _task, epoch, values, anchors, batch, _tid in envs:
            assert epoch == 9
            got.setdefault((topic, partition), []).append((values[0], batch))
            if isinstance(anchors, RunAnchors):
                assert stream in ("default", "other") and anchors.left == sum(1 for e in envs if e[5] is anchors)
                if id(anchors) not in seen:
                    seen.add(id(anchors))
                    acked[anchors.root] = acked.get(anchors.root, 0) ^ anchors.edge
            else:
                for r, e in anchors.items():
                    acked[r] = acked.get(r, 0) ^ e
    assert got == wanted
    assert {r: v for r, v in acked.items() if v} == {r: v for r, v in xored.items() if v}


def test_a_run_of_one_tuple_is_the_envelope_encode_rooted_writes_and_packing_off_sends_envelopes() -> None:
    sent: list[bytes] = []
    head = encode_head("default", "split", 3, 9)
    t = TupleTransfer(lambda topic, value, key=None, partition=-1: sent.append(value), BOLTS, max_tuples=8)
    e = t.emit_run(BOLTS[1], 0, head, 5, encode_values(["to"]))
    t.flush()
    assert sent == [encode_rooted("default", "split", 3, 9, ["to"], 5, e)]
    off = TupleTransfer(lambda topic, value, key=None, partition=-1: sent.append(value), BOLTS, max_tuples=1)
    e1 = off.emit_run(BOLTS[1], 0, head, 5, encode_values(["to"]))
    e2 = off.emit_run(BOLTS[1], 0, head, 5, encode_values(["be"]))
    assert 0 not in (e1, e2) and e1 != e2  # one edge per tuple, sent at once
    assert sent[1:] == [encode_rooted("default", "split", 3, 9, ["to"], 5, e1), encode_rooted("default", "split", 3, 9, ["be"], 5, e2)]
    assert t.emit_run("out", 0, head, 0, encode_values(["x"])) == 0 and sent[-1] == encode_tuple("default", "split", 3, ["x"], {}, epoch=9)


def test_a_word_in_a_run_costs_its_values_and_a_comma() -> None:
    """A word count's pack of runs: the head, root and edge once per run; the ids per word are gone (55 bytes a word in a version 4 pack)."""
    sent: list[bytes] = []
    t = TupleTransfer(lambda topic, value, key=None, partition=-1: sent.append(value), BOLTS, max_tuples=1000)
    head = encode_head("default", "split", 3, 1_764_400_000_000)
    words = ["to", "be", "or", "not"] * 25
    for n, w in enumerate(words):
        t.emit_run(BOLTS[1], 0, head, 2**64 - 1 - n // 50, encode_values([w]))  # two trees, 50 words each
    t.flush()
    (pack,) = sent
    assert pack.startswith(b"[6,") and pack.count(b'"default","split",3,1764400000000') == 2
    assert (len(pack) - 2 * 80) / len(words) < 8


def test_a_run_s_tuples_ack_nothing_until_the_last_which_acks_the_run_s_edge_and_every_child_edge() -> None:
    """Storm's algebra with one edge per run: every id in exactly two ops (tests/unit/acker/test_ledger_properties.py shuffles them)."""
    ex, sent = split_executor()
    ex._process(Record(ex.topic, 0, 40, b'[6,[["default","lines",0,1],5,77,[["to be"],["or"]]]]'))
    acks = ex.acks
    assert acks is not None
    # split acks each line right after it emitted its words: the first line leaves its words'
    # edges to the run, and the last line acks the run's edge with every word's
    ops = acks.drain()
    ((op,),) = ops.values()
    assert op[1] == 5 and op[2] != 0  # one op for root 5
    ex.transfer.flush()
    words = [e for t, v, p in sent if t in ex.topology.bolt_topics for e in decode_tuples(v, component="count", topic=t, partition=p, offset=0)]
    assert sorted(e[4][0] for e in words) == ["be", "or", "to"]
    total = op[2] ^ 77
    for anchors in {id(e[5]): e[5] for e in words}.values():
        total ^= anchors.edge if isinstance(anchors, RunAnchors) else next(iter(anchors.values()))
    assert total == 0  # the line run's edge, the words' edges and the acks cancel: the tree is complete once the words are acked


def test_leaves_of_a_run_send_no_op_until_the_last_acks_the_run_s_edge() -> None:
    acks = AckBuffer("acker", 1)
    leaves = as_tuples(b'[6,[["default","split",0,1],5,77,[["a"],["b"],["c"]]]]')
    coll = collector(Capture(), acks)
    for t in leaves[:2]:
        coll.ack(t)
        assert not acks.drain()  # a leaf that is not the run's last: nothing to send
    coll.ack(leaves[2])
    assert acks.drain() == {0: [[1, 5, 77]]}
    coll.ack(leaves[2])  # a second ack of a tuple is ignored, as always
    assert not acks.drain()


def test_transfer_runs_false_writes_version_4_packs_for_a_rolling_upgrade() -> None:
    topology = load_topology(EXAMPLES / "wordcount.py", "packs")
    sent: dict[bool, list[bytes]] = {}
    for runs in (True, False):
        conf = resolve(topology.conf, {"squall.transfer.runs": runs})
        ex = BoltExecutor(ExecutorEnv(topology=topology, component="split", conf=conf, bootstrap="127.0.0.1:1", workdir=Path("/tmp")))
        out: list[bytes] = []
        ex.produce = ex.transfer.send = lambda topic, value, key=None, partition=-1, _out=out, **kw: _out.append(value)
        ex.by_partition[0] = ex._new_task(0)
        ex._process(Record(ex.topic, 0, 0, encode_rooted("default", "lines", 0, 1, ["to be or not to be that is the question"], 1, 77)))
        ex.transfer.flush()
        sent[runs] = [v for v in out if v.startswith(b"[")]
    assert {v[:3] for v in sent[True]} == {b"[6,"}
    assert {v[:3] for v in sent[False]} == {b"[4,"}
    words = {runs: sorted(e[4][0] for v in vs for e in decode_tuples(v, **WHERE)) for runs, vs in sent.items()}
    assert words[True] == words[False] and len(words[True]) == 10
