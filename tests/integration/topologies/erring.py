"""A topology whose components err in every way ``squall errors`` reports.

* ``lines``: a KafkaSpout whose translator refuses a line starting with ``{`` that is not JSON
  (a poison record);
* ``check``: raises ZeroDivisionError on a line with ``divide`` and fails a line with
  ``reject`` with a reason, on every delivery (so both are dead-lettered once out of retries),
  until the file ``$ERRING_FIXED_FILE`` names exists;
* ``count``: counts the words of the lines that passed.

A tree per record (``squall.spout.tree.records`` 1, as in Storm), so a failing line replays
alone and the good lines are counted once.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from confluent_kafka import Message

from examples.wordcount import Count, words
from streams import BasicBolt, BasicOutputCollector, FailedException, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple

log = logging.getLogger("erring")


class StrictLines(RecordTranslator):
    def translate(self, msg: Message) -> tuple[str, list[Any]] | None:
        line = (msg.value() or b"").decode()
        if line.startswith("{"):
            json.loads(line)  # poison: "{not json" raises JSONDecodeError
        return self.stream, [line]


def fixed() -> bool:
    """The bug that rejects lines is fixed: the file ``$ERRING_FIXED_FILE`` names exists (so a replayed dead letter passes)."""
    path = os.environ.get("ERRING_FIXED_FILE")
    return bool(path) and os.path.exists(path or "")


class Check(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        line = tuple[0]
        log.debug("checking %r", line)  # shown once squall set_log_level turns "erring" to DEBUG
        if "divide" in line:
            print(1 / len(""))
        if "reject" in line and not fixed():
            raise FailedException(f"rejected: {line!r} names no known user")
        for word in words(line):
            collector.emit([word])


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=StrictLines("line")), 1)
    b.set_bolt("check", Check(), 1).shuffle_grouping("lines")
    b.set_bolt("count", Count(), 1).fields_grouping("check", ["word"])
    b.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    return b.create_topology(
        "erring",
        {"topology.workers": 2, "topology.max.error.report.per.interval": 100, "squall.spout.max.retries": 2, "squall.spout.tree.records": 1},
    )
