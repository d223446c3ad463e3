"""Spout and bolt base classes (Storm's ISpout, IBolt, IBasicBolt)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streams.exceptions import TopologyError

if TYPE_CHECKING:
    from streams.collector import OutputCollector, SpoutOutputCollector
    from streams.context import TopologyContext
    from streams.tuple import Tuple

DEFAULT_STREAM = "default"


class OutputFieldsDeclarer:
    """Collects a component's output streams: ``stream -> (fields, direct)``."""

    def __init__(self, component: str = "?") -> None:
        self.component = component
        self.streams: dict[str, tuple[tuple[str, ...], bool]] = {}

    def declare(self, fields: list[str] | tuple[str, ...], stream: str = DEFAULT_STREAM, direct: bool = False) -> None:
        """Declare ``fields`` on ``stream``. Raises TopologyError on a redeclared stream."""
        if stream in self.streams:
            raise TopologyError(f"[{self.component}] stream {stream!r} declared twice")
        self.streams[stream] = (tuple(fields), direct)

    def declare_stream(self, stream: str, fields: list[str] | tuple[str, ...], direct: bool = False) -> None:
        self.declare(fields, stream=stream, direct=direct)


class Component:
    """What spouts and bolts share: output declaration and component config."""

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare output streams; the default declares nothing."""

    def get_component_configuration(self) -> dict[str, Any] | None:
        """Component-level config (highest precedence), e.g. tick frequency."""
        return None


class Spout(Component):
    """A source of tuples (Storm's ISpout). One instance runs per task.

    ``next_tuple`` must not block for long: it emits zero or more tuples and returns.
    ``ack``/``fail`` receive the message id given to ``collector.emit``.
    """

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self.collector = collector

    def next_tuple(self) -> None:
        raise NotImplementedError

    def ack(self, msg_id: Any) -> None:
        """The tree rooted at ``msg_id`` was fully processed."""

    def fail(self, msg_id: Any) -> None:
        """The tree rooted at ``msg_id`` failed or timed out."""

    def close(self) -> None:
        """Called on a clean shutdown (not guaranteed, as in Storm)."""


class Bolt(Component):
    """Processes tuples (Storm's IRichBolt). Must ack or fail every input tuple."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector

    def execute(self, tuple: Tuple) -> None:  # noqa: A002 - Storm's name
        raise NotImplementedError

    def cleanup(self) -> None:
        """Called on a clean shutdown (not guaranteed)."""


class BasicOutputCollector:
    """Emits anchored to the current input tuple (Storm's BasicOutputCollector)."""

    __slots__ = ("_collector", "_input")

    def __init__(self, collector: OutputCollector) -> None:
        self._collector = collector
        self._input: Tuple | None = None

    def emit(self, values: list[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        return self._collector.emit(values, anchors=self._input, stream=stream)

    def emit_direct(self, task: int, values: list[Any], stream: str = DEFAULT_STREAM) -> None:
        self._collector.emit_direct(task, values, anchors=self._input, stream=stream)


class BasicBolt(Component):
    """A bolt that anchors every emit to its input and acks it after ``execute``
    returns; raising :class:`~streams.exceptions.FailedException` fails it instead
    (Storm's IBasicBolt / BasicBoltExecutor)."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Called once per task before the first tuple."""

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        raise NotImplementedError

    def cleanup(self) -> None:
        """Called on a clean shutdown."""


class BasicBoltExecutor(Bolt):
    """Adapts a :class:`BasicBolt` to :class:`Bolt`: anchor, ack, fail on FailedException.

    Any other exception propagates to the executor, which fails the tuple and logs it
    with the component id and the record's topic/partition/offset.
    """

    def __init__(self, inner: BasicBolt) -> None:
        self.inner = inner

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.inner.declare_output_fields(declarer)

    def get_component_configuration(self) -> dict[str, Any] | None:
        return self.inner.get_component_configuration()

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.basic = BasicOutputCollector(collector)
        self.inner.prepare(conf, context)

    def execute(self, tuple: Tuple) -> None:  # noqa: A002
        from streams.exceptions import FailedException

        self.basic._input = tuple
        try:
            self.inner.execute(tuple, self.basic)
        except FailedException:
            self.collector.fail(tuple)
            return
        finally:
            self.basic._input = None
        self.collector.ack(tuple)

    def cleanup(self) -> None:
        self.inner.cleanup()
