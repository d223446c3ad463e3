"""A consumer whose commits keep failing is replaced, at the positions its executor processed
(streams.kafka.commit_watch; found on Apache Kafka: an assign-only consumer that lost its
group coordinator for good after a broker pause)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition
from hypothesis import given
from hypothesis import strategies as st

import streams.kafka.feed as feed_module
import streams.runtime.bolt as bolt_module
from streams.kafka.commit_watch import CommitWatch
from streams.kafka.feed import FedTask, SourceFeed
from streams.kafka.fetch_gaps import FakeRecord, FetchGaps
from streams.runtime.bolt_task import BoltTask

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@given(st.floats(0.1, 100), st.lists(st.tuples(st.floats(0, 50), st.booleans()), max_size=80))
def test_the_watch_says_replace_once_per_run_of_failures_as_long_as_the_setting(after: float, events: list[tuple[float, bool]]) -> None:
    """Model: True exactly when failures have run, with no success, for at least ``after`` seconds."""
    watch = CommitWatch("count", after)
    now, since, said = 0.0, None, 0
    for step, ok in events:
        now += step
        if ok:
            watch.ok()
            since = None
            continue
        got = watch.failed(now)
        if since is None:
            since, expected = now, False
        elif now - since >= after:
            since, expected = None, True
        else:
            expected = False
        assert got == expected
        said += expected
    assert watch.reopens == said


def test_a_bad_setting_names_the_component() -> None:
    with pytest.raises(ValueError, match=r"\[count\] reopen_after_s must be > 0"):
        CommitWatch("count", 0)


class FailingConsumer:
    """Hands out records of one partition; every commit fails as librdkafka's did (_WAIT_COORD)."""

    def __init__(self, n: int) -> None:
        self.n, self.position, self.commits = n, 0, 0

    def consume(self, num: int, timeout_s: float) -> list[FakeRecord]:
        out = [FakeRecord("in", 0, o) for o in range(self.position, min(self.n, self.position + num))]
        self.position += len(out)
        return out

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        self.commits += 1
        raise KafkaException(KafkaError(KafkaError._WAIT_COORD))


class Source:
    """Takes records; says everything handed over so far is committable."""

    def __init__(self) -> None:
        self.offsets: list[int] = []

    def on_records(self, msgs: list[FakeRecord]) -> None:
        self.offsets += [m.offset() or 0 for m in msgs]

    @property
    def buffered(self) -> int:
        return 0

    def committable(self) -> dict[tuple[str, int], int]:
        return {("in", 0): self.offsets[-1] + 1} if self.offsets else {}


def test_the_spout_feed_replaces_its_consumer_after_the_last_record_it_handed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SimpleNamespace(t=0.0)
    monkeypatch.setattr(feed_module, "time", SimpleNamespace(monotonic=lambda: clock.t))
    made: list[tuple[Any, list[TopicPartition]]] = []

    def reopen(old: Any, cfg: Any, positions: list[TopicPartition], component: str, gaps: FetchGaps) -> Any:
        assert component == "reader" and cfg["group.id"] == "g" and gaps is feed.gaps
        made.append((old, positions))
        return FailingConsumer(0)

    monkeypatch.setattr(feed_module, "reopen_consumer", reopen)
    old, source = FailingConsumer(1000), Source()
    feed = SourceFeed("reader", "t", source, 1, "unused:9092", old, 100, config={"group.id": "g"}, reopen_after_s=30.0)  # type: ignore[arg-type]
    task = FedTask(0, source, [("in", 0)])  # type: ignore[arg-type]
    feed.tasks[0], feed.owner[("in", 0)], feed.starts[("in", 0)] = task, task, 0
    for t in (0.0, 10.0, 29.0):
        clock.t = t
        feed.poll(0)
        feed.commit()
    assert not made and old.commits == 3
    clock.t = 31.0
    feed.commit()
    assert len(made) == 1 and made[0][0] is old and feed.commit_watch.reopens == 1
    (tp,) = made[0][1]
    assert (tp.topic, tp.partition, tp.offset) == ("in", 0, 300)  # 3 polls of 100 records: the next is 300
    assert feed.data is not old


def test_a_bolt_reopens_after_each_tasks_last_executed_record_or_where_it_started(monkeypatch: pytest.MonkeyPatch) -> None:
    from streams.config import resolve
    from streams.model.loader import load_topology
    from streams.runtime.executor import ExecutorEnv

    topology = load_topology(EXAMPLES / "wordcount.py", "wc-reopen")
    ex = bolt_module.BoltExecutor(ExecutorEnv(topology=topology, component="count", conf=resolve({}), bootstrap="127.0.0.1:1", workdir=Path("/tmp")))
    assert ex.commit_watch.reopen_after_s == 30.0  # squall.consumer.reopen.after.secs
    got: list[list[TopicPartition]] = []

    def reopen(old: Any, cfg: Any, positions: list[TopicPartition], component: str, gaps: FetchGaps) -> Any:
        got.append(positions)
        return "new"

    monkeypatch.setattr(bolt_module, "reopen_consumer", reopen)
    ex.by_partition = {0: BoltTask(5, None, None, next_offset=42), 1: BoltTask(6, None, None)}  # type: ignore[arg-type]
    ex.start_offsets = {0: 10, 1: OFFSET_BEGINNING}
    gaps = FetchGaps("count")
    ex.reopen_due = True
    assert ex._reopen("old", {"group.id": "squall.wc.count"}, gaps) == "new"
    assert [(tp.partition, tp.offset) for tp in got[0]] == [(0, 42), (1, OFFSET_BEGINNING)]
    assert not ex.reopen_due
