"""Word count whose split bolt holds one line's tuple until the test releases it (for the resume test).

The line ``HOLD <path>`` is acked on the first tick after a file exists at ``<path>``; every
other line at once. So the spout's contiguous commit stays below that line while everything
after it is acked: what a new life of the spout must not replay. The test creates the file
once it has killed the spout's worker, so the hold lasts as long as the test needs however slow
the machine (a fixed 10 s hold raced a loaded CI machine). One spout task alone in worker 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from examples.wordcount import Count, words
from streams import Bolt, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple


class HoldingSplit(Bolt):
    """Split; a ``HOLD <path>`` line's tuple is acked on the first tick after ``<path>`` exists."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def get_component_configuration(self) -> dict[str, Any]:
        return {"topology.tick.tuple.freq.secs": 0.5}

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.held: list[tuple[Path, Tuple]] = []

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        if tuple.is_tick:
            held, self.held = self.held, []
            for release, t in held:  # one look at each file: one that appeared between two looks lost its tuple
                if release.exists():
                    self.collector.ack(t)
                else:
                    self.held.append((release, t))
            return
        line = tuple[0]
        for word in words(line):
            self.collector.emit([word], anchors=tuple)
        if line.startswith("HOLD "):
            self.held.append((Path(line.removeprefix("HOLD ").strip()), tuple))
        else:
            self.collector.ack(tuple)


def topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 1)
    builder.set_bolt("split", HoldingSplit(), 1).shuffle_grouping("lines")
    builder.set_bolt("count", Count(), 1).fields_grouping("split", ["word"])
    builder.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    # executors: lines, split, count, acker -> one per worker; w0 hosts only the spout
    return builder.create_topology("held", {"topology.workers": 4, "topology.message.timeout.secs": 60})
