"""One spout, one recorder bolt per grouping. Every recorder writes (grouping, task, key, n)
to the output topic, so a test can check each grouping's distribution rule."""

from __future__ import annotations

from typing import Any

from streams import BasicBolt, BasicOutputCollector, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple

TASKS = 4


class KeyN(RecordTranslator):
    """``b"k7,123"`` -> ``["k7", 123]``."""

    def streams(self) -> dict[str, tuple[str, ...]]:
        return {"default": ("key", "n")}

    def translate(self, msg: Any) -> tuple[str, list[Any]]:
        key, n = msg.value().decode().split(",")
        return "default", [key, int(n)]


class Recorder(BasicBolt):
    def __init__(self, name: str) -> None:
        self.name = name

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["grouping", "task", "key", "n"], stream="seen")

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.task = context.this_task_id

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        collector.emit([self.name, self.task, tuple.get("key"), tuple.get("n")], stream="seen")


class Director(BasicBolt):
    """Sends each tuple to one task of 'direct', chosen from n: tasks[n % 4]."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "n"], stream="to_direct", direct=True)

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.targets = context.component_tasks("direct")

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        n = tuple.get("n")
        collector.emit_direct(self.targets[n % len(self.targets)], [tuple.get("key"), n], stream="to_direct")


class EvenOdd:
    """Custom grouping: even n to the first target task, odd n to the second."""

    def prepare(self, context: Any, stream: tuple[str, str], target_tasks: list[int]) -> None:
        self.targets = target_tasks

    def choose_tasks(self, task_id: int, values: list[Any]) -> list[int]:
        return [self.targets[values[1] % 2]]


GROUPINGS = ["shuffle", "fields", "all", "global", "none", "direct", "local_or_shuffle", "custom"]


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("src", KafkaSpout(translator=KeyN()), 1)
    b.set_bolt("shuffle", Recorder("shuffle"), 2, num_tasks=TASKS).shuffle_grouping("src")
    b.set_bolt("fields", Recorder("fields"), 2, num_tasks=TASKS).fields_grouping("src", ["key"])
    b.set_bolt("all", Recorder("all"), 2, num_tasks=TASKS).all_grouping("src")
    b.set_bolt("global", Recorder("global"), 2, num_tasks=TASKS).global_grouping("src")
    b.set_bolt("none", Recorder("none"), 2, num_tasks=TASKS).none_grouping("src")
    b.set_bolt("director", Director(), 1).shuffle_grouping("src")
    b.set_bolt("direct", Recorder("direct"), 2, num_tasks=TASKS).direct_grouping("director", "to_direct")
    b.set_bolt("local_or_shuffle", Recorder("local_or_shuffle"), 2, num_tasks=TASKS).local_or_shuffle_grouping("src")
    b.set_bolt("custom", Recorder("custom"), 2, num_tasks=TASKS).custom_grouping("src", EvenOdd())
    for g in GROUPINGS:
        b.set_output("squall.{topology}.seen", g, "seen", key_field="key", value_field="n", merge="last")
    return b.create_topology("groupings", {"topology.workers": 2})
