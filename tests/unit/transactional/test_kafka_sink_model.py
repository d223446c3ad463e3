"""KafkaSink at topology time (issue 30): its topics, its serializers, and the embedded broker refused by name."""

from __future__ import annotations

import pytest

from examples.wordcount_exactly_once_sink import topology
from service.admin import topology_topics
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
