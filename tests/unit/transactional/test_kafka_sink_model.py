"""KafkaSink at topology time (issue 30): its topics, its serializers, and the embedded broker refused by name."""

from __future__ import annotations

from typing import Any, cast

import pytest

from examples.wordcount_exactly_once_sink import topology
from service.brokers.admin import topology_topics
from streams.config import TopologyConfig
from streams.exceptions import TopologyError
from streams.model.checks import check_confs
from streams.transactional.kafka_sink import KafkaSink


def test_the_sink_topic_and_a_txids_partition_per_task_are_created_at_submit() -> None:
    t = topology()
    specs = topology_topics(t, TopologyConfig())
    assert specs[f"squall.{t.name}.counts"].partitions == 1
    assert specs[f"squall.{t.name}.out.txids"].partitions == t.components["out"].num_tasks == 2
    assert t.components["out"].committer and t.components["out"].obj.sink_topic(t.name) == f"squall.{t.name}.counts"


def test_the_embedded_broker_is_refused_naming_the_component() -> None:
    t = topology()
    check_confs(t, {})  # Apache Kafka: fine
    with pytest.raises(TopologyError, match=r"^\[out\] KafkaSink writes exactly once with Kafka transactions, and the embedded broker's read_committed"):
        check_confs(t, {"squall.broker.embedded": True})


def test_a_bad_serializer_is_refused() -> None:
    with pytest.raises(TopologyError, match=r"\[out\] KafkaSink value_serializer must be one of"):
        KafkaSink("t", value_serializer="xml").validate("out")


class FakeWriter:
    def __init__(self) -> None:
        self.commits: list[tuple[int, int]] = []

    def commit(self, txid: int, records: list[object]) -> None:
        self.commits.append((txid, len(records)))


def test_a_poison_tuple_is_dead_lettered_once_however_often_its_batch_is_replayed() -> None:
    from streams.model.batch import BatchAttempt
    from streams.model.context import TopologyContext
    from streams.model.io import ExecutorIO
    from streams.model.tuple import Tuple

    t = topology()
    letters: list[tuple[bytes, str]] = []

    class Letters:
        def dead_letter(self, msg: Any, reason: str, attempts: int, details: Any = None) -> None:
            raise AssertionError("a sink dead-letters by parts")

        def dead_letter_raw(self, value: bytes | None, key: bytes | None, reason: str, **where: Any) -> None:
            letters.append((value or b"", reason))

    io = ExecutorIO(dead_letters=Letters())
    writer = io.shared["kafka-sink:out:0"] = FakeWriter()
    ctx = TopologyContext(t, "out", t.components["out"].task_base, io=io)
    poison = Tuple([object(), 1], "default", "count", 0, {}, {"word": 0, "count": 1})
    for attempt in (1, 2, 3):  # txid 7 fails twice, then commits
        sink = KafkaSink("t")  # a fresh copy per batch, as the runtime makes
        sink.prepare({}, ctx, cast(Any, None), BatchAttempt(7, attempt))
        sink.execute(poison)
        if attempt == 3:
            sink.finish_batch()
    assert len(letters) == 1 and "KafkaSink cannot write the tuple" in letters[0][1]
    assert writer.commits == [(7, 0)] and io.shared["kafka-sink:out:0:poisoned"] == {}
