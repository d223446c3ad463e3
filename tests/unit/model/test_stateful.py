"""Stateful bolts: exactly-once state updates under at-least-once delivery, crashes and failed tuples (hypothesis; no broker).

The simulation plays Squall's contract: a record's word tuples carry the ids a deterministic
``split`` gives them; a record whose words were not all acked (a crash lost them, or the bolt
failed one) is replayed whole, as the spout replays a failed tree. The state that the last
checkpoint holds must be the exact word count.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams import BasicBolt, KafkaSpout, StatefulBolt, TopologyBuilder, Tuple
from streams.config import TopologyConfig
from streams.exceptions import FailedException, TopologyError
from streams.model.context import TopologyContext
from streams.model.io import ExecutorIO
from streams.model.stateful import StatefulBoltExecutor
from streams.model.tuple import tick_tuple
from streams.runtime.acks import AckBuffer
from streams.state import OpenedStores, open_backend
from streams.state.keyvalue import KeyValueState
from streams.wire.ids import child_path
from tests.unit.sim import Capture, collector


class Split(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: Any) -> None:  # noqa: A002
        for w in str(tuple[0]).split():
            collector.emit([w])


class Count(StatefulBolt):
    def __init__(self) -> None:
        self.fail_next = False
        self.inits = 0

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state
        self.inits += 1

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        word = tuple[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        if self.fail_next:
            self.fail_next = False
            raise FailedException("a downstream store refused it")
        self.collector.ack(tuple)


def topology(url: str) -> Any:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout())
    b.set_bolt("split", Split()).shuffle_grouping("lines")
    b.set_bolt("count", Count(), 1).fields_grouping("split", ["word"])
    return b.create_topology("wc", {"squall.state.url": url, "topology.state.checkpoint.interval.ms": 1000})


class Task:
    """One life of the count task: a fresh executor restored from the store (a restart after a crash)."""

    def __init__(self, url: str, stores: OpenedStores, clock: list[float]) -> None:
        t = topology(url)
        self.bolt = t.components["count"].new_instance()
        assert isinstance(self.bolt, StatefulBoltExecutor)
        self.bolt.clock = lambda: clock[0]
        self.acks = AckBuffer("acker", 1)
        conf = TopologyConfig.model_validate({"squall.state.url": url, "topology.state.checkpoint.interval.ms": 1000})
        ctx = TopologyContext(t, "count", t.components["count"].task_base, io=ExecutorIO(stores=stores), config=conf)
        self.bolt.prepare({}, ctx, collector(Capture(), self.acks, tuple_ids=True))


def word_tuple(record: int, i: int, word: str, root: int | None = None) -> Tuple:
    """Word ``i`` of ``record``, in the tree ``root`` (default: one tree per record), with the id a deterministic split gives it."""
    t = Tuple([word], "default", "split", 1, {record + 1 if root is None else root: 7}, {"word": 0}, "squall.wc.count", 0, record)
    t.tid = (1, record, child_path(0, i))
    return t


class Spout:
    """The spout's side: one tree per attempt of a record; a failed attempt replays the record
    as a new tree, while the failed tree's copies may still be in flight (stale)."""

    def __init__(self, records: list[list[str]]) -> None:
        self.records = records
        self.roots = iter(range(1, 10**9))
        self.current: dict[int, int] = {}
        self.queue: list[tuple[int, int, int]] = []
        self.delivered: dict[int, list[Tuple]] = {}
        self.failed: set[int] = set()
        self.done: set[int] = set()
        for r in range(len(records)):
            self.attempt(r)

    def attempt(self, r: int) -> None:
        root = next(self.roots)
        self.current[r] = root
        self.queue += [(r, i, root) for i in range(len(self.records[r]))]

    def take(self, k: int) -> Tuple:
        r, i, root = self.queue.pop(k)
        t = word_tuple(r, i, self.records[r][i], root)
        self.delivered.setdefault(root, []).append(t)
        return t

    def settle(self, acks: AckBuffer) -> None:
        """Failed trees replay their record (if it is that record's current tree); a tree whose every word was acked finishes its record."""
        self.failed |= set(acks.fails)
        acks.fails.clear()
        acks.acks.clear()
        for r, root in list(self.current.items()):
            if root in self.failed:
                self.attempt(r)
            elif len({t.tid for t in self.delivered.get(root, []) if t.settled}) >= len(self.records[r]):
                self.done.add(r)
                del self.current[r]

    def crash(self) -> None:
        """The count task died: every unfinished record replays as a new tree (its old copies stay in flight)."""
        for r in list(self.current):
            self.attempt(r)


@settings(max_examples=75, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4), min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_the_checkpointed_count_is_exact_after_crashes_replays_and_failed_tuples(records: list[list[str]], rng: random.Random) -> None:
    url = "memory://"
    stores = OpenedStores(backends={url: open_backend(url)})
    clock = [0.0]
    task = Task(url, stores, clock)
    spout = Spout(records)
    for _ in range(400):
        if len(spout.done) == len(records):
            break
        action = rng.random()
        if action < 0.04:  # kill -9: what was not checkpointed is lost
            task = Task(url, stores, clock)
            spout.crash()
            continue
        if action < 0.14:
            task.bolt.inner.fail_next = True
        if action < 0.25 or not spout.queue:
            clock[0] += rng.choice([0.1, 0.3, 1.5])  # a tick: an idle checkpoint, none, or one that is due
            task.bolt.execute(tick_tuple())
        else:
            k = rng.randrange(len(spout.queue))
            if rng.random() < 0.1:
                spout.queue.append(spout.queue[k])  # delivered twice
            task.bolt.execute(spout.take(k))  # a FailedException from the bolt rolls back inside
        spout.settle(task.acks)
    task.bolt.inner.fail_next = False
    while len(spout.done) < len(records):  # drain: deliver what is left (stale copies too), checkpoint
        if spout.queue:
            task.bolt.execute(spout.take(0))
        clock[0] += 1.5
        task.bolt.execute(tick_tuple())
        spout.settle(task.acks)
    final = Task(url, stores, clock)  # what the store holds
    assert dict(final.bolt.state.items()) == dict(Counter(w for ws in records for w in ws))


def test_acks_wait_for_the_checkpoint_and_a_replay_is_skipped() -> None:
    url = "memory://"
    stores = OpenedStores(backends={url: open_backend(url)})
    clock = [0.0]
    task = Task(url, stores, clock)
    t = word_tuple(0, 0, "a")
    task.bolt.execute(t)
    assert not t.settled and task.acks.acks == {}  # acked by the bolt, held
    clock[0] = 1.0
    task.bolt.execute(tick_tuple())
    assert t.settled and task.acks.acks  # the checkpoint holds it: acked for real
    again = Task(url, stores, clock)  # restarted: the replay of the same tuple is skipped
    dup = word_tuple(0, 0, "a")
    again.bolt.execute(dup)
    assert again.bolt.duplicates == 1 and dict(again.bolt.state.items()) == {"a": 1}


def test_an_idle_task_checkpoints_early_and_a_busy_one_at_the_interval() -> None:
    """A trickle of input is acked after ~0.2 s, not a whole interval: a tick that finds no
    tuple since the one before checkpoints what waits; while tuples keep coming between ticks,
    checkpoints come every interval (1 s here)."""
    url = "memory://"
    stores = OpenedStores(backends={url: open_backend(url)})
    clock = [0.0]
    task = Task(url, stores, clock)
    t = word_tuple(0, 0, "a")
    task.bolt.execute(t)
    clock[0] = 0.1
    task.bolt.execute(tick_tuple())  # a tuple came since the last tick: busy, no checkpoint
    assert not t.settled
    clock[0] = 0.2
    task.bolt.execute(tick_tuple())  # none since: idle, and 0.2 s since the last checkpoint
    assert t.settled and task.bolt.checkpoints == 1 and task.bolt.idle_checkpoints == 1
    clock[0] = 0.3
    task.bolt.execute(tick_tuple())  # idle with nothing to ack: no checkpoint
    assert task.bolt.checkpoints == 1
    busy = []
    for i in range(1, 12):  # a tuple between every two ticks for 1.1 s
        busy.append(word_tuple(i, 0, "b"))
        task.bolt.execute(busy[-1])
        clock[0] = 0.3 + 0.1 * i
        task.bolt.execute(tick_tuple())
        if clock[0] < 0.2 + 1.0 - 1e-9:
            assert task.bolt.checkpoints == 1 and not busy[0].settled, clock[0]
    assert task.bolt.checkpoints == 2 and task.bolt.idle_checkpoints == 1 and busy[0].settled  # the interval's checkpoint


def test_a_failed_tuple_rolls_the_task_back_and_fails_what_ran_since_the_checkpoint() -> None:
    url = "memory://"
    stores = OpenedStores(backends={url: open_backend(url)})
    clock = [0.0]
    task = Task(url, stores, clock)
    first = word_tuple(0, 0, "a")
    task.bolt.execute(first)
    clock[0] = 1.0
    task.bolt.execute(tick_tuple())  # checkpoint: a=1
    second, third = word_tuple(1, 0, "a"), word_tuple(2, 0, "b")
    task.bolt.execute(second)
    task.bolt.inner.fail_next = True
    task.bolt.execute(third)
    assert dict(task.bolt.state.items()) == {"a": 1} and task.bolt.rollbacks == 1
    assert set(task.acks.fails) == {2, 3}  # both trees replay
    assert task.bolt.inner.counts is task.bolt.state and task.bolt.inner.inits == 1  # refilled in place; init_state not called again
    task.bolt.execute(word_tuple(1, 0, "a"))  # the replays are applied again (their ids were forgotten)
    task.bolt.execute(word_tuple(2, 0, "b"))
    assert dict(task.bolt.state.items()) == {"a": 2, "b": 1}


def test_a_stateful_bolt_refuses_a_shuffle_grouping_naming_it() -> None:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout())
    b.set_bolt("count", Count()).shuffle_grouping("lines")
    with pytest.raises(TopologyError, match=r"\[count\] a stateful bolt cannot take lines/default by shuffle grouping"):
        b.create_topology("wc")


def test_a_rollback_also_fails_a_skipped_duplicate_whose_original_it_undid() -> None:
    """A stale copy from a failed tree is applied, its replay's copy is skipped as a duplicate; a
    rollback then undoes the stale copy: the skipped one must fail too, or its tree completes
    with no effect left (a lost word, seen in the integration test)."""
    url = "memory://"
    stores = OpenedStores(backends={url: open_backend(url)})
    clock = [0.0]
    task = Task(url, stores, clock)
    stale, replay = word_tuple(0, 0, "a"), word_tuple(0, 0, "a")
    replay.anchors = {99: 5}  # the replay's tree
    task.bolt.execute(stale)
    task.bolt.execute(replay)
    assert task.bolt.duplicates == 1
    task.bolt.inner.fail_next = True
    task.bolt.execute(word_tuple(1, 0, "b"))
    assert replay.settled and 99 in task.acks.fails and dict(task.bolt.state.items()) == {}


def test_applied_ids_are_forgotten_only_when_old_and_below_every_spout_commit() -> None:
    """A split that restarts re-reads what it ran since its last offset commit, long after the
    spout committed past those records: the ids must outlive that too (the kill -9 test with
    PostgreSQL counted such copies again when ids went at the spout's commit alone)."""
    from streams.state.keyvalue import AppliedIds, Checkpointer

    now = [1000.0]
    backend = open_backend("memory://")
    cp = Checkpointer(backend, "t.count", 0, clock=lambda: now[0])
    applied, state = AppliedIds(seal_ids=1), KeyValueState()  # every checkpoint its own segment
    applied.add((1, 10, 7))
    cp.commit(state, applied)  # checkpoint 1 at 1000
    now[0] = 1500.0
    applied.add((1, 20, 7))
    applied.add((2, 5, 7))
    cp.commit(state, applied)  # checkpoint 2 at 1500
    assert applied.forget({1: 100, 2: 100}, before=900.0) == 0  # too young
    assert applied.forget({1: 15, 2: 100}, before=2000.0) == 1  # checkpoint 2 holds offset 20 >= 15: stops there
    assert (1, 10, 7) not in applied and (1, 20, 7) in applied
    cp.commit(state, applied, forget_upto=1)
    again = AppliedIds(seal_ids=1)
    Checkpointer(backend, "t.count", 0).restore(again)
    assert (1, 10, 7) not in again and (1, 20, 7) in again and (2, 5, 7) in again
    assert again.checkpoints() == [2]
    assert again.forget({1: 21, 2: 6}, before=2000.0) == 2 and len(again) == 0
