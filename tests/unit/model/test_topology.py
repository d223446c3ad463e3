"""Topology building: task layout, validation errors that name the component, config."""

from __future__ import annotations

from typing import Any

import pytest

from streams import BasicBolt, ConfigError, KafkaSpout, TopologyBuilder, TopologyError
from streams.config import env_layer, resolve


class Emits(BasicBolt):
    def __init__(self, *fields: str, direct: bool = False) -> None:
        self.fields = fields
        self.direct = direct

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(list(self.fields))
        declarer.declare(["x"], stream="side", direct=self.direct)

    def execute(self, tuple: Any, collector: Any) -> None:  # noqa: A002
        pass


def base() -> TopologyBuilder:
    b = TopologyBuilder()
    b.set_spout("src", KafkaSpout(), 2)
    return b


def test_task_ids_are_global_spouts_first() -> None:
    b = TopologyBuilder()
    b.set_bolt("b1", Emits("w"), 2, num_tasks=4).shuffle_grouping("src")
    b.set_spout("src", KafkaSpout(), 3)
    t = b.create_topology("t")
    assert list(t.components["src"].task_ids) == [0, 1, 2]
    assert list(t.components["b1"].task_ids) == [3, 4, 5, 6]
    assert t.component_of_task(5) == "b1"
    assert t.spout_tasks == 3


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda b: b.set_bolt("x", Emits("w")).shuffle_grouping("nope"), "[x] subscribes to unknown component 'nope'"),
        (lambda b: b.set_bolt("x", Emits("w")).shuffle_grouping("src", "other"), "[x] subscribes to unknown stream 'other'"),
        (lambda b: b.set_bolt("x", Emits("w")).fields_grouping("src", ["word"]), "[x] fields grouping on ['word']"),
        (lambda b: b.set_bolt("src", Emits("w")), "[src] duplicate component id"),
        (lambda b: b.set_bolt("x", Emits("w"), 3, num_tasks=2).shuffle_grouping("src"), "[x] parallelism 3 is above its task count 2"),
        (lambda b: b.set_bolt("x", Emits("w")).direct_grouping("src"), "[x] direct grouping on src/default"),
    ],
)
def test_validation_errors_name_the_component(build: Any, message: str) -> None:
    b = base()
    with pytest.raises(TopologyError) as exc:
        build(b)
        b.create_topology("t")
    assert message in str(exc.value)


def test_direct_stream_needs_direct_grouping() -> None:
    b = base()
    b.set_bolt("a", Emits("w", direct=True)).shuffle_grouping("src")
    b.set_bolt("c", Emits("w")).shuffle_grouping("a", "side")
    with pytest.raises(TopologyError, match=r"\[c\] shuffle grouping on direct stream a/side"):
        b.create_topology("t")


def test_config_precedence_defaults_service_topology_component() -> None:
    service = {"topology.max.spout.pending": 10, "topology.message.timeout.secs": 5, "topology.workers": 3}
    topology = {"topology.max.spout.pending": 20, "topology.message.timeout.secs": 6}
    component = {"topology.max.spout.pending": 30}
    conf = resolve(service, topology, component, where="split")
    assert conf.max_spout_pending == 30  # component wins
    assert conf.message_timeout_secs == 6  # topology beats service
    assert conf.workers == 3  # service beats defaults
    assert conf.ackers == 1  # default
    assert conf.get("topology.max.spout.pending") == 30


def test_config_errors_name_component_and_key() -> None:
    with pytest.raises(ConfigError, match=r"\[count\] invalid config: topology.message.timeout.secs"):
        resolve({"topology.message.timeout.secs": -1}, where="count")


def test_env_layer_reads_storm_keys() -> None:
    env = {"SQUALL_TOPOLOGY_MAX_SPOUT_PENDING": "7", "SQUALL_FLUSH_INTERVAL_SECS": "0.2", "OTHER": "x"}
    layer = env_layer(env)
    assert layer == {"topology.max.spout.pending": "7", "squall.flush.interval.secs": "0.2"}
    assert resolve(layer).max_spout_pending == 7


def test_an_output_topic_that_is_a_components_input_topic_is_refused() -> None:
    class Echo(BasicBolt):
        def declare_output_fields(self, declarer: Any) -> None:
            declarer.declare(["k", "v"])

        def execute(self, tuple: Any, collector: Any) -> None:  # noqa: A002
            collector.emit(list(tuple.values))

    b = TopologyBuilder()
    b.set_spout("s", KafkaSpout())
    b.set_bolt("late", Echo()).shuffle_grouping("s")
    b.set_output("squall.{topology}.late", "late", key_field="k", value_field="v")
    with pytest.raises(TopologyError, match=r"\[late\] output topic 'squall.\{topology\}.late' is the input topic of component 'late'"):
        b.create_topology("t")
