"""Hypothesis properties of the XOR ledger over random tuple DAGs built by the real collector.

A random DAG: the spout emits one tuple per root; each bolt step picks earlier tuples as
anchors (one, several = multi-anchoring), emits a child, and later every tuple is acked
(or failed). Ops reach the ledger in a random order, with duplicates and drops.

With ``runs`` > 0 the bolt's collector sends through a :class:`~streams.runtime.transfer.TupleTransfer`
with packs of at most that many tuples: children of one tree travel in runs with one edge id
each (:func:`streams.wire.codec.encode_run`), and a step may emit children of several
anchors of the same tree one after another, so that they share a run.
"""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from acker.ledger import Ledger
from streams.runtime.acks import AckBuffer
from streams.wire.acker import OP_ACK, OP_INIT
from tests.unit.sim import Capture, apply_ops, as_tuples, collector


class Clock:
    t = 0.0

    def __call__(self) -> float:
        return self.t


def build_tree(seed: int, n_roots: int, steps: int, fanout_max: int, runs: int = 0) -> tuple[list[list[int]], list[int]]:
    """Run spout + bolts through the real collector; return (ops one per message, roots)."""
    rnd = random.Random(f"tree-{seed}")
    ops: list[list[int]] = []
    roots = []
    tuples = []
    for _ in range(n_roots):
        root = rnd.getrandbits(64) or 1
        edge = rnd.getrandbits(64) or 1
        roots.append(root)
        ops.append([OP_INIT, root, edge, 0])
        from streams import Tuple

        tuples.append(Tuple(["x"], "default", "s", 0, {root: edge}, {"v": 0}))
    open_tuples = list(tuples)
    for _ in range(steps):
        if not open_tuples:
            break
        k = rnd.randint(1, min(fanout_max, len(open_tuples)))
        anchors = rnd.sample(open_tuples, k)
        cap = Capture()
        acks = AckBuffer("acker", 1)
        coll = collector(cap, acks, runs=runs)
        one_each = runs > 0 and rnd.random() < 0.5  # children of each anchor in turn: of one tree, they share a run
        for _ in range(rnd.randint(0, fanout_max)):
            if one_each:
                for a in anchors:
                    coll.emit(["y"], anchors=a)
            else:
                coll.emit(["y"], anchors=anchors)
        if coll.runs is not None:
            coll.runs.flush()
        for _topic, raw in cap.records:
            open_tuples.extend(as_tuples(raw))
        # ack the anchors (each as its own message, as if from separate flushes)
        for a in anchors:
            coll.ack(a)
            open_tuples.remove(a)
            for part_ops in acks.drain().values():
                ops.extend(part_ops)
    # ack whatever is left
    cap = Capture()
    acks = AckBuffer("acker", 1)
    coll = collector(cap, acks)
    for t in open_tuples:
        coll.ack(t)
        for part_ops in acks.drain().values():
            ops.extend(part_ops)
    return ops, roots


dag = st.tuples(st.integers(0, 2**32), st.integers(1, 4), st.integers(0, 12), st.integers(1, 3), st.sampled_from([0, 1, 2, 8]))
"""``(seed, roots, steps, fan-out, runs)``: runs 0 sends envelopes; 1 turns packing off (each tuple its envelope); 2 and 8 bound a pack."""


@settings(max_examples=200, deadline=None)
@given(dag, st.randoms(use_true_random=False))
def test_every_edge_acked_completes_every_tree_in_any_order(params: tuple[int, int, int, int, int], rnd: random.Random) -> None:
    ops, roots = build_tree(*params)
    rnd.shuffle(ops)
    outs = apply_ops(Ledger(30, Clock()), ops)
    assert sorted(o.root for o in outs) == sorted(roots)
    assert all(o.acked for o in outs)


@settings(max_examples=200, deadline=None)
@given(dag, st.randoms(use_true_random=False), st.data())
def test_a_dropped_ack_never_completes_and_times_out(params: tuple[int, int, int, int, int], rnd: random.Random, data: st.DataObject) -> None:
    ops, _roots = build_tree(*params)
    acks = [i for i, op in enumerate(ops) if op[0] == OP_ACK]
    victim = ops[data.draw(st.sampled_from(acks))]
    rest = [op for op in ops if op is not victim]
    rnd.shuffle(rest)
    clock = Clock()
    ledger = Ledger(30, clock)
    outs = apply_ops(ledger, rest)
    assert victim[1] not in {o.root for o in outs if o.acked}
    clock.t += 46
    expired = ledger.tick()
    assert victim[1] in {o.root for o in expired if not o.acked}


@settings(max_examples=200, deadline=None)
@given(dag, st.randoms(use_true_random=False), st.data())
def test_a_duplicated_message_never_completes_falsely(params: tuple[int, int, int, int, int], rnd: random.Random, data: st.DataObject) -> None:
    ops, roots = build_tree(*params)
    dup = ops[data.draw(st.integers(0, len(ops) - 1))]
    stream = [*ops, list(dup)]
    rnd.shuffle(stream)
    clock = Clock()
    ledger = Ledger(30, clock)
    outs = apply_ops(ledger, stream)
    # The duplicated root may only "complete" if the duplicate arrived after completion,
    # which leaves a non-zero orphan that times out with no spout task (nobody is told);
    # it never completes twice, and a duplicate before completion keeps it from completing.
    completed = [o.root for o in outs if o.acked]
    assert len(completed) == len(set(completed))
    clock.t += 46
    expired = ledger.tick()
    if dup[1] not in completed:
        assert dup[1] in {o.root for o in expired}
    other = set(roots) - {dup[1]}
    assert other <= set(completed)


@settings(max_examples=200, deadline=None)
@given(dag, st.randoms(use_true_random=False), st.data())
def test_a_fail_anywhere_fails_the_tree(params: tuple[int, int, int, int, int], rnd: random.Random, data: st.DataObject) -> None:
    ops, roots = build_tree(*params)
    # Some bolt fails a tuple instead of acking it: its ack becomes a fail for each root.
    acks = [i for i, op in enumerate(ops) if op[0] == OP_ACK]
    i = data.draw(st.sampled_from(acks))
    victim = ops[i][1]
    stream = [*ops[:i], [2, victim], *ops[i + 1 :]]
    rnd.shuffle(stream)
    outs = apply_ops(Ledger(30, Clock()), stream)
    assert victim not in {o.root for o in outs if o.acked}
    assert victim in {o.root for o in outs if not o.acked}
    assert set(roots) - {victim} <= {o.root for o in outs if o.acked}


@settings(max_examples=300, deadline=None)
@given(dag, st.randoms(use_true_random=False), st.data())
def test_no_tree_completes_before_each_of_its_ops_arrived_whatever_is_written_twice(
    params: tuple[int, int, int, int, int], rnd: random.Random, data: st.DataObject
) -> None:
    """Records written twice (a producer retry without idempotence) never complete a tree early.

    Any ops, the spout's init included, arrive any number of extra times, in any order. The
    ledger ignores an init for a tree that has one (:meth:`acker.ledger.Ledger.init`); the first
    completion of each tree then comes only once every op of it arrived at least once.
    """
    ops, roots = build_tree(*params)
    extra = data.draw(st.lists(st.integers(0, len(ops) - 1), max_size=2 * len(ops)))
    stream = [*range(len(ops)), *extra]  # indices into ops: a duplicate is the same op again
    rnd.shuffle(stream)
    ledger = Ledger(30, Clock())
    arrived: set[int] = set()
    first_completion: set[int] = set()
    for i in stream:
        arrived.add(i)
        out = apply_ops(ledger, [ops[i]])
        for o in out:
            if o.acked and o.root not in first_completion:
                first_completion.add(o.root)
                missing = [j for j, op in enumerate(ops) if op[1] == o.root and j not in arrived]
                assert not missing, f"tree {o.root} completed before ops {missing} arrived"
    times = Counter(stream)
    once = {r for r in roots if all(times[j] == 1 for j, op in enumerate(ops) if op[1] == r and op[0] != OP_INIT)}
    assert once <= first_completion  # an init written twice is ignored: only a repeated ack can keep a tree from completing (it times out)
