"""The word count with checkpointed state: ``state[word] += 1`` in a StatefulBolt (Storm's IStatefulBolt), exact after crashes.

    squall run examples/wordcount_stateful.py [--input PATH] [--output counts.json]

``lines`` (KafkaSpout) -> ``split`` (shuffle; the word count's tokeniser) -> ``count`` (fields on
``word``; a :class:`~streams.StatefulBolt`). Each count task keeps its words in a
:class:`~streams.KeyValueState` that the runtime checkpoints every
``topology.state.checkpoint.interval.ms`` into ``squall.state.url`` (SQLite by default), and
acks a word only once a checkpoint holds it. A word replayed after a crash is recognised by
its id (the same on every replay, since ``split`` emits the same words in the same order) and
not counted again. ``squall run`` writes the checkpointed state of every count task as JSON.
"""

from __future__ import annotations

import re
from typing import Any

from streams import BasicBolt, BasicOutputCollector, KafkaSpout, KeyValueState, RecordTranslator, StatefulBolt, Topology, TopologyBuilder, Tuple

WORD = re.compile(r"[a-z']+")


def words(line: str) -> list[str]:
    """The example's tokeniser: lowercase, then ``[a-z']+``."""
    return WORD.findall(line.lower())


class Split(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        for word in words(tuple[0]):
            collector.emit([word])


class Count(StatefulBolt):
    """``state[word] += 1``; the runtime checkpoints the state and holds the acks until then."""

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        word = tuple[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.collector.ack(tuple)


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 2)
    b.set_bolt("split", Split(), 1).shuffle_grouping("lines")
    b.set_bolt("count", Count(), 2, num_tasks=4).fields_grouping("split", ["word"])
    b.set_state_output("count", kind="keyvalue")
    return b.create_topology("wordcount-stateful", {"topology.workers": 4})
