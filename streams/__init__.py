"""Squall's programming model: Storm's spouts, bolts and collectors on Kafka.

Every name a topology file needs comes from here::

    from streams import TopologyBuilder, Spout, Bolt, BasicBolt, KafkaSpout, FailedException

The package is layered (docs/design.md, "Layers"): :mod:`streams.wire` (bytes on Kafka),
:mod:`streams.state`, :mod:`streams.windowing` (which tuples are in which window),
:mod:`streams.model` (what a topology is made of),
:mod:`streams.kafka` (reading Kafka), :mod:`streams.monitoring`, :mod:`streams.runtime`
(the executors) and :mod:`streams.transactional` (exactly once). Above them, Storm's
higher-level APIs compile onto the same spouts and bolts: :mod:`streams.api` (the Stream
API, and :class:`JoinBolt`) and :mod:`streams.trident` (Trident).

``import streams`` loads no Kafka client: the Kafka-backed names (:class:`KafkaSpout`,
:class:`RecordTranslator`, :class:`RetryPolicy`, :class:`TransactionalKafkaSpout`,
:class:`OpaqueKafkaSpout`) are imported on first use, as faust's ``__init__`` does
(``tests/unit/test_layers.py`` checks it in a fresh interpreter).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from streams.api.join_bolt import JoinBolt
from streams.exceptions import ConfigError, FailedException, FatalError, SquallError, TopologyError
from streams.model.batch import BatchAttempt, BatchBolt, BatchOutputCollector, Committer
from streams.model.bolt import BasicBolt, BasicOutputCollector, Bolt
from streams.model.collector import OutputCollector, SpoutOutputCollector
from streams.model.component import OutputFieldsDeclarer
from streams.model.context import TopologyContext
from streams.model.grouping import CustomStreamGrouping
from streams.model.hooks import BoltAckInfo, BoltExecuteInfo, BoltFailInfo, EmitInfo, SpoutAckInfo, SpoutFailInfo, TaskHook
from streams.model.spec import GroupingKind, Topology
from streams.model.spout import Spout
from streams.model.stateful import StatefulBolt
from streams.model.stateful_windowed import StatefulWindowedBolt
from streams.model.topology import TopologyBuilder
from streams.model.tuple import DEFAULT_STREAM, Tuple
from streams.model.windowed import TupleWindow, WindowedBolt
from streams.state.keyvalue import KeyValueState
from streams.windowing.spec import Count, Duration

if TYPE_CHECKING:
    from streams.kafka.bolt import DefaultTopicSelector, FieldNameBasedTupleToKafkaMapper, FieldNameTopicSelector, KafkaBolt
    from streams.kafka.retry import RetryPolicy
    from streams.kafka.spout import KafkaSpout, RecordTranslator
    from streams.transactional.kafka_sink import KafkaSink
    from streams.transactional.spout import OpaqueKafkaSpout, TransactionalKafkaSpout

_LAZY = {
    "KafkaBolt": "streams.kafka.bolt",
    "FieldNameBasedTupleToKafkaMapper": "streams.kafka.bolt",
    "DefaultTopicSelector": "streams.kafka.bolt",
    "FieldNameTopicSelector": "streams.kafka.bolt",
    "KafkaSpout": "streams.kafka.spout",
    "RecordTranslator": "streams.kafka.spout",
    "RetryPolicy": "streams.kafka.retry",
    "TransactionalKafkaSpout": "streams.transactional.spout",
    "KafkaSink": "streams.transactional.kafka_sink",
    "OpaqueKafkaSpout": "streams.transactional.spout",
}
"""Names loaded on first use: their modules bring the Kafka client."""

__all__ = [
    "DEFAULT_STREAM",
    "BasicBolt",
    "BasicOutputCollector",
    "BatchAttempt",
    "BatchBolt",
    "BatchOutputCollector",
    "Bolt",
    "BoltAckInfo",
    "BoltExecuteInfo",
    "BoltFailInfo",
    "Committer",
    "ConfigError",
    "Count",
    "CustomStreamGrouping",
    "DefaultTopicSelector",
    "Duration",
    "EmitInfo",
    "FailedException",
    "FatalError",
    "FieldNameBasedTupleToKafkaMapper",
    "FieldNameTopicSelector",
    "GroupingKind",
    "JoinBolt",
    "KafkaBolt",
    "KafkaSink",
    "KafkaSpout",
    "KeyValueState",
    "OpaqueKafkaSpout",
    "OutputCollector",
    "OutputFieldsDeclarer",
    "RecordTranslator",
    "RetryPolicy",
    "Spout",
    "SpoutAckInfo",
    "SpoutFailInfo",
    "SpoutOutputCollector",
    "SquallError",
    "StatefulBolt",
    "StatefulWindowedBolt",
    "TaskHook",
    "Topology",
    "TopologyBuilder",
    "TopologyContext",
    "TopologyError",
    "TransactionalKafkaSpout",
    "Tuple",
    "TupleWindow",
    "WindowedBolt",
]


def __getattr__(name: str) -> Any:
    """Import a Kafka-backed name on first use (PEP 562). Raises AttributeError otherwise."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'streams' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
