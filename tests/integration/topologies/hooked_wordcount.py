"""The example word count with an audit hook on every task (``topology.auto.task.hooks``), defined in this file.

Each task's :class:`AuditHook` counts what it saw and writes one JSON line to
``<audit.dir>/<component>-<task>.json`` when the task stops cleanly (``cleanup``).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from examples.wordcount import Count, Split
from streams import BoltAckInfo, EmitInfo, KafkaSpout, RecordTranslator, SpoutAckInfo, TaskHook, Topology, TopologyBuilder


class AuditHook(TaskHook):
    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.where = Path(".")
        self.name = "?"

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.where = Path(conf["audit.dir"])
        self.name = f"{context.this_component_id}-{context.this_task_id}"

    def emit(self, info: EmitInfo) -> None:
        self.seen["emit"] += 1

    def spout_ack(self, info: SpoutAckInfo) -> None:
        self.seen["spout_ack"] += 1

    def bolt_ack(self, info: BoltAckInfo) -> None:
        self.seen["bolt_ack"] += 1

    def cleanup(self) -> None:
        (self.where / f"{self.name}.json").write_text(json.dumps(self.seen))


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 1)
    b.set_bolt("split", Split(), 2).shuffle_grouping("lines")
    b.set_bolt("count", Count(), 2).fields_grouping("split", ["word"])
    b.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    return b.create_topology("hooked-wordcount", {"topology.workers": 2, "topology.auto.task.hooks": [f"{__name__}:AuditHook"]})
