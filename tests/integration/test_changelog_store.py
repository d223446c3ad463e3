"""The compacted-changelog state store (``kafka://``, issue 26) on both brokers: checkpoints come back
whole, a checkpoint cut short by a crash never does, forgotten tuple ids go, and a zombie owner is
fenced."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from streams.exceptions import FatalError
from streams.kafka.changelog_store import ChangelogKvStore, changelog_topic
from streams.state.backend import KvCommit
from tests.integration.conftest import TestBroker

pytestmark = [pytest.mark.broker, pytest.mark.embedded]


def fresh_state(broker: TestBroker, tasks: int = 2) -> str:
    """A new state name and its compacted topic (partition = task)."""
    from service.brokers.admin import COMPACTED, ensure_topics

    name = f"t{uuid.uuid4().hex[:8]}.count"
    topic = changelog_topic(name)
    ensure_topics(broker.bootstrap, {topic: tasks}, configs={topic: COMPACTED})
    return name


def test_checkpoints_come_back_and_tasks_stay_apart(broker: TestBroker) -> None:
    name = fresh_state(broker)
    store = ChangelogKvStore(broker.bootstrap, component="count")
    try:
        assert store.kv_load(name, 0).checkpoint == 0
        assert store.kv_load(name, 1).values == {}
        store.kv_commit(name, 0, KvCommit(1, 10.0, {'"a"': "1", '"b"': "2"}, [], {7: (41, b"\x01" * 12)}))
        store.kv_commit(name, 0, KvCommit(2, 11.0, {'"a"': "3"}, ['"b"'], {7: (50, b"\x02" * 12)}))
        store.kv_commit(name, 1, KvCommit(1, 12.0, {'"z"': "9"}, []))
    finally:
        store.close()
    again = ChangelogKvStore(broker.bootstrap, component="count")
    try:
        snap = again.kv_load(name, 0)
        assert snap.values == {'"a"': "3"} and snap.checkpoint == 2
        assert snap.applied == [(1, 10.0, 7, 41, b"\x01" * 12), (2, 11.0, 7, 50, b"\x02" * 12)]
        assert again.kv_load(name, 1).values == {'"z"': "9"}
        assert sorted(again.kv_items(name)) == [(0, '"a"', "3"), (1, '"z"', "9")]
        # Forgetting checkpoint 1's ids leaves checkpoint 2's.
        again.kv_commit(name, 0, KvCommit(3, 13.0, {}, [], {}, forget_upto=1))
        assert [row[0] for row in again.kv_load(name, 0).applied] == [2]
    finally:
        again.close()


def test_a_checkpoint_cut_short_by_a_crash_is_never_seen(broker: TestBroker) -> None:
    """The crashed owner's open transaction: aborted by the next owner's fencing on Apache Kafka;
    on the embedded broker (which shows aborted records) left out because no marker covers it."""
    name = fresh_state(broker, tasks=1)
    first = ChangelogKvStore(broker.bootstrap, component="count")
    first.kv_load(name, 0)
    first.kv_commit(name, 0, KvCommit(1, 1.0, {'"a"': "1", '"b"': "1"}, []))
    # A crash in the middle of checkpoint 2: the owner's transactional id wrote records, no marker, no commit.
    crashed = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"{changelog_topic(name)}.0", "log_level": 3})
    crashed.init_transactions(30)
    crashed.begin_transaction()
    cp = [("cp", f"{first._writers[(name, 0)].epoch}.2".encode())]
    crashed.produce(changelog_topic(name), b"99", b'v"a"', partition=0, headers=cp)
    crashed.produce(changelog_topic(name), None, b'v"b"', partition=0, headers=cp)
    crashed.flush(10)
    second = ChangelogKvStore(broker.bootstrap, component="count")
    try:
        snap = second.kv_load(name, 0)
        assert snap.values == {'"a"': "1", '"b"': "1"} and snap.checkpoint == 1
        second.kv_commit(name, 0, KvCommit(2, 2.0, {'"c"': "5"}, []))
        # The first owner, alive after all (a zombie), cannot write over the new owner's state.
        with pytest.raises(FatalError, match=r"\[count\].*fenced"):
            first.kv_commit(name, 0, KvCommit(2, 3.0, {'"a"': "1000"}, []))
    finally:
        second.close()
    third = ChangelogKvStore(broker.bootstrap, component="count")
    try:
        assert third.kv_load(name, 0).values == {'"a"': "1", '"b"': "1", '"c"': "5"}
    finally:
        third.close()
