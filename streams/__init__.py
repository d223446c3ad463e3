"""Squall's programming model and data plane: Storm's spouts, bolts and collectors on Kafka.

Public API (Storm names, Pythonic form)::

    from streams import TopologyBuilder, Spout, Bolt, BasicBolt, KafkaSpout, FailedException
"""

from streams.component import BasicBolt, BasicOutputCollector, Bolt, OutputFieldsDeclarer, Spout
from streams.exceptions import FailedException, FatalError, SquallError, TopologyError
from streams.kafka_spout import KafkaSpout
from streams.topology import Topology, TopologyBuilder
from streams.tuple import Tuple

__all__ = [
    "BasicBolt",
    "BasicOutputCollector",
    "Bolt",
    "FailedException",
    "FatalError",
    "KafkaSpout",
    "OutputFieldsDeclarer",
    "Spout",
    "SquallError",
    "Topology",
    "TopologyBuilder",
    "TopologyError",
    "Tuple",
]
