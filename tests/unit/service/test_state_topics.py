"""Topics a stateful bolt needs (issue 26): a compacted changelog per stateful bolt, one partition per task, only with kafka:// state."""

from __future__ import annotations

from examples.wordcount_stateful import topology
from service.brokers.admin import COMPACTED, topology_topics
from streams.config import TopologyConfig


def test_kafka_state_gets_a_compacted_changelog_with_a_partition_per_task() -> None:
    t = topology()
    specs = topology_topics(t, TopologyConfig.model_validate({"squall.state.url": "kafka://"}))
    spec = specs[f"squall.{t.name}.count.state"]
    assert spec.partitions == t.components["count"].num_tasks == 4 and spec.config == COMPACTED
    assert [name for name in specs if name.endswith(".state")] == [f"squall.{t.name}.count.state"]


def test_a_database_store_needs_no_changelog_topic() -> None:
    t = topology()
    specs = topology_topics(t, TopologyConfig.model_validate({"squall.state.url": "sqlite:///tmp/x.db"}))
    assert not [name for name in specs if name.endswith(".state")]


def test_a_component_level_url_counts() -> None:
    t = topology()
    t.components["count"].conf["squall.state.url"] = "kafka://"
    specs = topology_topics(t, TopologyConfig.model_validate({"squall.state.url": "sqlite:///tmp/x.db"}))
    assert f"squall.{t.name}.count.state" in specs
