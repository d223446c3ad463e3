"""Test topologies chosen by ``SQUALL_TEST_MODE`` (the workers inherit the environment).

* ``zero_ackers``  -- ``topology.acker.executors = 0``; split fails ~10% of lines.
* ``no_msg_id``    -- the spout emits without message ids; split fails ~10% of lines.
* ``unanchored``   -- split emits unanchored; count fails every tuple.
* ``at_most_once`` -- KafkaSpout(at_most_once); split fails ~10% of lines.
* ``dlq``          -- split always fails lines containing "poison-me"; 2 retries.
* ``poison``       -- the spout's translator parses JSON; bad JSON is a poison record.
* ``join``         -- two spouts joined on key (multi-anchoring); the sink fails each
                      key's first joined tuple, so both input trees are replayed.
"""

from __future__ import annotations

import json
import os
import zlib
from typing import Any

from examples.wordcount import Count, Split, words
from streams import BasicBolt, BasicOutputCollector, Bolt, FailedException, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple

MODE = os.environ.get("SQUALL_TEST_MODE", "")


class FlakySplit(BasicBolt):
    """Fails every line whose CRC is divisible by 10 (every delivery)."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        line = tuple[0]
        if zlib.crc32(line.encode()) % 10 == 0 or "poison-me" in line:
            raise FailedException(f"flaky line at {tuple.where}")
        for w in words(line):
            collector.emit([w])


class UnanchoredSplit(Bolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        for w in words(tuple[0]):
            self.collector.emit([w])  # no anchors: not part of the tree
        self.collector.ack(tuple)


class FailingCount(Bolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"], stream="counts")

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        self.collector.fail(tuple)


class JsonText(RecordTranslator):
    def streams(self) -> dict[str, tuple[str, ...]]:
        return {"default": ("line",)}

    def translate(self, msg: Any) -> tuple[str, list[Any]]:
        return "default", [json.loads(msg.value())["text"]]


class Side(RecordTranslator):
    """``b"k3"`` -> ``["k3"]``."""

    def streams(self) -> dict[str, tuple[str, ...]]:
        return {"default": ("key",)}

    def translate(self, msg: Any) -> tuple[str, list[Any]]:
        return "default", [msg.value().decode()]


class Join(Bolt):
    """Joins left and right on key; the joined tuple is anchored to both inputs."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key"])

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.waiting: dict[tuple[str, str], Tuple] = {}

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        key = tuple.get("key")
        other = "right" if tuple.source_component == "left" else "left"
        mate = self.waiting.pop((other, key), None)
        if mate is None:
            self.waiting[(tuple.source_component, key)] = tuple
            return
        self.collector.emit([key], anchors=[tuple, mate])
        self.collector.ack(tuple)
        self.collector.ack(mate)


class FailFirst(Bolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "count"], stream="joined")

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.seen: set[str] = set()

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        key = tuple.get("key")
        if key not in self.seen:
            self.seen.add(key)
            self.collector.fail(tuple)
            return
        self.collector.emit([key, 1], stream="joined")
        self.collector.ack(tuple)


def topology() -> Topology:
    b = TopologyBuilder()
    conf: dict[str, Any] = {"topology.workers": 2}
    if MODE == "join":
        b.set_spout("left", KafkaSpout(translator=Side()), 1)
        b.set_spout("right", KafkaSpout(translator=Side()), 1)
        b.set_bolt("join", Join(), 1).fields_grouping("left", ["key"]).fields_grouping("right", ["key"])
        b.set_bolt("sink", FailFirst(), 1).shuffle_grouping("join")
        b.set_output("squall.{topology}.joined", "sink", "joined", key_field="key", value_field="count", merge="sum")
        return b.create_topology("join", conf)
    guarantee = {"no_msg_id": "none", "at_most_once": "at_most_once"}.get(MODE, "at_least_once")
    translator = JsonText() if MODE == "poison" else RecordTranslator("line")
    b.set_spout("lines", KafkaSpout(translator=translator, processing_guarantee=guarantee), 1)
    if MODE == "unanchored":
        b.set_bolt("split", UnanchoredSplit(), 1).shuffle_grouping("lines")
        b.set_bolt("count", FailingCount(), 1).fields_grouping("split", ["word"])
    else:
        split = FlakySplit() if MODE in ("zero_ackers", "no_msg_id", "at_most_once", "dlq") else Split()
        b.set_bolt("split", split, 1).shuffle_grouping("lines")
        b.set_bolt("count", Count(), 1).fields_grouping("split", ["word"])
    b.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    if MODE == "zero_ackers":
        conf["topology.acker.executors"] = 0
    if MODE == "dlq":
        conf["squall.spout.max.retries"] = 2
    return b.create_topology(f"modes-{MODE or 'plain'}", conf)
