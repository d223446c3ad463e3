"""storm-starter's ExclamationTopology, ending in a KafkaBolt: lines -> words -> exclaim1 -> exclaim2 -> sink.

    squall run examples/exclamation.py [--input PATH] [--output exclaimed.jsonl]

``words`` splits each line on whitespace (storm-starter's spout emits single words);
``exclaim1`` and ``exclaim2`` each append ``!!!`` (shuffle grouping, 3 and 2 executors, as in
storm-starter); ``sink`` is a :class:`~streams.kafka.bolt.KafkaBolt` writing each word to the
topic ``squall.<topology>.exclaimed`` (key: the word as it came in; value: the exclaimed word,
as a string). A word is acked only when the broker confirmed its record, so every input word
is in the topic at least once. ``squall run`` writes the topic's records as JSON lines.
"""

from __future__ import annotations

from typing import Any

from streams import BasicBolt, BasicOutputCollector, FieldNameBasedTupleToKafkaMapper, KafkaBolt, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple


class Words(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        for word in str(tuple[0]).split():
            collector.emit([word])


class Exclamation(BasicBolt):
    """storm-starter's ExclamationBolt: ``word`` -> ``word + "!!!"``, keeping the original as ``key``."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        key = tuple.get("key") if "key" in tuple.fields else tuple[0]
        collector.emit([key, tuple.get("word") + "!!!"])


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 1)
    b.set_bolt("words", Words(), 1).shuffle_grouping("lines")
    b.set_bolt("exclaim1", Exclamation(), 3).shuffle_grouping("words")
    b.set_bolt("exclaim2", Exclamation(), 2).shuffle_grouping("exclaim1")
    sink = KafkaBolt("squall.{topology}.exclaimed", FieldNameBasedTupleToKafkaMapper(key_field="key", message_field="word"), value_serializer="str")
    b.set_bolt("sink", sink, 1).shuffle_grouping("exclaim2")
    return b.create_topology("exclamation", {"topology.workers": 2})
