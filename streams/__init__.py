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

``import streams`` loads nothing but the exceptions: every other name is imported on first use,
as faust's ``__init__`` does, so a submodule (``streams.config`` for the CLI) comes without the
whole model, and no Kafka client is loaded until a Kafka-backed name (:class:`KafkaSpout`,
:class:`TransactionalKafkaSpout`, ...) is used (``tests/unit/test_layers.py`` checks it in a
fresh interpreter).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from streams.exceptions import ConfigError, FailedException, FatalError, SquallError, TopologyError

if TYPE_CHECKING:
    from streams.api.join_bolt import JoinBolt
    from streams.kafka.bolt import DefaultTopicSelector, FieldNameBasedTupleToKafkaMapper, FieldNameTopicSelector, KafkaBolt
    from streams.kafka.retry import RetryPolicy
    from streams.kafka.spout import KafkaSpout, RecordTranslator
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
    from streams.transactional.kafka_sink import KafkaSink
    from streams.transactional.spout import OpaqueKafkaSpout, TransactionalKafkaSpout
    from streams.windowing.spec import Count, Duration

_LAZY = {
    "JoinBolt": "streams.api.join_bolt",
    "BatchAttempt": "streams.model.batch",
    "BatchBolt": "streams.model.batch",
    "BatchOutputCollector": "streams.model.batch",
    "Committer": "streams.model.batch",
    "BasicBolt": "streams.model.bolt",
    "BasicOutputCollector": "streams.model.bolt",
    "Bolt": "streams.model.bolt",
    "OutputCollector": "streams.model.collector",
    "SpoutOutputCollector": "streams.model.collector",
    "OutputFieldsDeclarer": "streams.model.component",
    "TopologyContext": "streams.model.context",
    "CustomStreamGrouping": "streams.model.grouping",
    "BoltAckInfo": "streams.model.hooks",
    "BoltExecuteInfo": "streams.model.hooks",
    "BoltFailInfo": "streams.model.hooks",
    "EmitInfo": "streams.model.hooks",
    "SpoutAckInfo": "streams.model.hooks",
    "SpoutFailInfo": "streams.model.hooks",
    "TaskHook": "streams.model.hooks",
    "GroupingKind": "streams.model.spec",
    "Topology": "streams.model.spec",
    "Spout": "streams.model.spout",
    "StatefulBolt": "streams.model.stateful",
    "StatefulWindowedBolt": "streams.model.stateful_windowed",
    "TopologyBuilder": "streams.model.topology",
    "DEFAULT_STREAM": "streams.model.tuple",
    "Tuple": "streams.model.tuple",
    "TupleWindow": "streams.model.windowed",
    "WindowedBolt": "streams.model.windowed",
    "KeyValueState": "streams.state.keyvalue",
    "Count": "streams.windowing.spec",
    "Duration": "streams.windowing.spec",
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
"""Every public name but the exceptions, loaded on first use (PEP 562): ``import streams.config``
(the CLI, the supervisor) does not load the programming model, and ``import streams`` loads no
Kafka client."""

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
    """Import a public name's module on first use (PEP 562). Raises AttributeError otherwise."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'streams' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
