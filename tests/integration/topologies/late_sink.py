"""lines -> sink: a KafkaBolt writing each line to the topic named by $SQUALL_TEST_SINK_TOPIC, which
Squall does not create (a selector that is not a fixed topic); deliveries time out after 2 s."""

from __future__ import annotations

import os

from streams import FieldNameBasedTupleToKafkaMapper, KafkaBolt, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple


class EnvTopic:
    def topic(self, tuple: Tuple | None) -> str | None:  # noqa: A002
        return os.environ["SQUALL_TEST_SINK_TOPIC"]


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 1)
    sink = KafkaBolt(
        EnvTopic(), FieldNameBasedTupleToKafkaMapper(key_field=None, message_field="line"), value_serializer="str", producer_config={"message.timeout.ms": 2000}
    )
    b.set_bolt("sink", sink, 1).shuffle_grouping("lines")
    return b.create_topology("late-sink", {"topology.workers": 1, "topology.message.timeout.secs": 20, "squall.spout.max.retries": 50})
