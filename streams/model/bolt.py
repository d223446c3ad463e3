"""The bolt base classes (Storm's ``IRichBolt``, ``IBasicBolt`` and ``BasicBoltExecutor``) and :class:`DelegatingBolt`, the base of bolts that wrap a bolt.

Their lifecycle is in :mod:`streams.model.component`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import override

from streams.config import TopologyConfig
from streams.exceptions import FailedException
from streams.model.collector import OutputCollector
from streams.model.component import Component, OutputFieldsDeclarer
from streams.model.context import TopologyContext
from streams.model.tuple import DEFAULT_STREAM, Tuple


class Bolt(Component):
    """Processes tuples (Storm's IRichBolt). Must ack or fail every input tuple.

    One copy runs per task; see the module docstring for the lifecycle and threading.
    """

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        """Called once per task copy, when its executor starts, before ``execute``."""
        self.collector = collector

    def execute(self, tuple: Tuple) -> None:  # noqa: A002 - Storm's name
        """Process one tuple; ack or fail it now or later (from this thread)."""
        raise NotImplementedError

    def cleanup(self) -> None:
        """Called when the worker stops cleanly (SIGTERM: rebalance, kill, drain); never after a crash.

        It may still emit, ack and fail: a flush and commit follow.
        """


class BasicOutputCollector:
    """Emits anchored to the current input tuple (Storm's BasicOutputCollector)."""

    __slots__ = ("_collector", "_input")

    def __init__(self, collector: OutputCollector) -> None:
        self._collector = collector
        self._input: Tuple | None = None

    def emit(self, values: list[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``values`` on ``stream`` anchored to the input being executed; returns the target tasks."""
        return self._collector.emit(values, self._input, stream)

    def emit_direct(self, task: int, values: list[Any], stream: str = DEFAULT_STREAM) -> None:
        """Emit to one global ``task`` on a direct stream, anchored to the input being executed."""
        self._collector.emit_direct(task, values, anchors=self._input, stream=stream)


class BasicBolt(Component):
    """A bolt that anchors every emit to its input and acks it after ``execute`` returns.

    Raising :class:`~streams.exceptions.FailedException` fails it instead (Storm's
    IBasicBolt / BasicBoltExecutor).
    """

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Called once per task before the first tuple."""

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        """Process one tuple; emits through ``collector`` are anchored to it, and it is acked on return."""
        raise NotImplementedError

    def cleanup(self) -> None:
        """Called when the worker stops cleanly (see :class:`Bolt`)."""


class DelegatingBolt(Bolt):
    """A bolt that runs another component: its declaration and topology-time checks are the wrapped one's.

    ``validate``, ``validate_conf``, ``declare_output_fields``,
    ``get_component_configuration``, ``sink_topic``, ``own_topics`` and ``needs_real_kafka``
    go to ``inner``; a subclass overrides what it adds to (and calls ``super()``), and
    implements the runtime side (``prepare``, ``execute``, ``cleanup``). Storm's wrappers
    (``BasicBoltExecutor``, ``StatefulBoltExecutor``, ``WindowedBoltExecutor``, Trident's
    ``CoordinatedBolt``) each forward these by hand; here they share this base.

    Args:
      inner: the wrapped component (a BasicBolt, a StatefulBolt, a BatchBolt, a Bolt ...).

    >>> class Words(BasicBolt):
    ...     def declare_output_fields(self, declarer):
    ...         declarer.declare(["word"])
    >>> d = OutputFieldsDeclarer("split")
    >>> BasicBoltExecutor(Words()).declare_output_fields(d)
    >>> d.streams["default"].fields
    ('word',)
    """

    def __init__(self, inner: Component) -> None:
        self.inner = inner

    @property
    def needs_real_kafka(self) -> str | None:  # type: ignore[override]
        """The wrapped component's (a KafkaSink needs Kafka's transactions)."""
        return self.inner.needs_real_kafka

    @override
    def validate(self, component_id: str) -> None:
        self.inner.validate(component_id)

    @override
    def validate_conf(self, component_id: str, conf: TopologyConfig) -> None:
        self.inner.validate_conf(component_id, conf)

    @override
    def validate_inputs(self, component_id: str, inputs: Mapping[tuple[str, str], tuple[str, ...]]) -> None:
        self.inner.validate_inputs(component_id, inputs)

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.inner.declare_output_fields(declarer)

    @override
    def get_component_configuration(self) -> dict[str, Any] | None:
        return self.inner.get_component_configuration()

    @override
    def sink_topic(self, topology: str) -> str | None:
        return self.inner.sink_topic(topology)

    @override
    def own_topics(self, topology: str, component: str, tasks: int) -> dict[str, int]:
        return self.inner.own_topics(topology, component, tasks)


class BasicBoltExecutor(DelegatingBolt):
    """Adapts a :class:`BasicBolt` to :class:`Bolt`: anchor, ack, fail on FailedException.

    Any other exception propagates to the executor, which fails the tuple and logs it
    with the component id and the record's topic/partition/offset; a FatalError stops the
    executor instead (:func:`streams.runtime.bolt_task.settle_raised`).
    """

    def __init__(self, inner: BasicBolt) -> None:
        super().__init__(inner)
        self.inner: BasicBolt = inner

    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.basic = BasicOutputCollector(collector)
        self.inner.prepare(conf, context)

    @override
    def execute(self, tuple: Tuple) -> None:
        self.basic._input = tuple
        try:
            self.inner.execute(tuple, self.basic)
        except FailedException as exc:
            self.collector.fail(tuple, str(exc) or None)
            return
        finally:
            self.basic._input = None
        self.collector.ack(tuple)

    @override
    def cleanup(self) -> None:
        self.inner.cleanup()
