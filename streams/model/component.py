"""Spout and bolt base classes (Storm's ISpout, IBolt, IBasicBolt) and their lifecycle.

Lifecycle (Storm's ``IBolt`` Javadoc, on Kafka):

1. **One copy per task.** The object given to ``set_spout``/``set_bolt`` is a prototype.
   When an executor starts, it makes a deep copy of the prototype for each of its fixed
   tasks (partitions of the component's input topic, :mod:`service.control.scheduling`), as Storm
   deserialises one instance per task. Tasks never share an instance; state on ``self``
   is per task.
2. **open / prepare at start.** ``Spout.open`` or ``Bolt.prepare`` runs once on the new
   copy, before its first ``next_tuple`` or ``execute``. It is given the resolved config
   (a ``dict``), a :class:`~streams.model.context.TopologyContext` and the task's collector.
3. **Tuples.** ``next_tuple``/``ack``/``fail`` (spouts) or ``execute`` (bolts) run on the
   executor's thread, one call at a time.
4. **close / cleanup when the worker stops cleanly** (SIGTERM: a ``rebalance`` that moves
   the task to another executor, a ``kill``, a supervisor's drain). A bolt may still emit,
   ack and fail in ``cleanup``: the executor flushes and commits after it, so tuples it
   held (deferred acks, windows) are not replayed. A crash (``kill -9``) runs neither:
   the tuples in flight time out and are replayed, as in Storm, once the worker restarts.
5. **Threads.** A task's methods are never called concurrently, and its collector is
   **not thread-safe**: emit, ack and fail only from the executor's thread (inside the
   callbacks above). Several tasks of one worker run on different threads.

Example: a bolt that counts words and emits the counts when its worker stops::

    >>> from streams import Bolt, TopologyBuilder, KafkaSpout
    >>> class Count(Bolt):
    ...     def prepare(self, conf, context, collector):
    ...         self.collector, self.counts = collector, {}
    ...     def declare_output_fields(self, declarer):
    ...         declarer.declare(["word", "count"])
    ...     def execute(self, tuple):
    ...         word = tuple.get("word")
    ...         self.counts[word] = self.counts.get(word, 0) + 1
    ...         self.collector.ack(tuple)
    ...     def cleanup(self):
    ...         for word, n in self.counts.items():
    ...             self.collector.emit([word, n])
    >>> b = TopologyBuilder()
    >>> _ = b.set_spout("words", KafkaSpout(), 1)
    >>> _ = b.set_bolt("count", Count(), 2).fields_grouping("words", ["value"])
    >>> b.create_topology("demo").components["count"].num_tasks
    2
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streams.config import TopologyConfig
from streams.exceptions import TopologyError
from streams.model.tuple import DEFAULT_STREAM


@dataclass(frozen=True, slots=True)
class Hold:
    """What a bolt holds before acking.

    ``tuples`` per task (count), ``seconds``, and ``event_time``: it holds tuples until newer
    timestamps arrive, however many that takes.
    """

    tuples: int = 0
    seconds: float = 0.0
    event_time: bool = False
    checkpointed: bool = False
    """It acks at its checkpoints (a stateful bolt): trees take up to ``topology.state.checkpoint.interval.ms`` longer."""


@dataclass(frozen=True, slots=True)
class StreamDef:
    """One declared output stream: its field names and whether it is direct (Storm's ``StreamInfo``)."""

    fields: tuple[str, ...]
    direct: bool = False


class OutputFieldsDeclarer:
    """Collects a component's output streams: ``stream -> StreamDef``."""

    def __init__(self, component: str = "?") -> None:
        self.component = component
        self.streams: dict[str, StreamDef] = {}

    def declare(self, fields: list[str] | tuple[str, ...], stream: str = DEFAULT_STREAM, direct: bool = False) -> None:
        """Declare ``fields`` on ``stream``. Raises TopologyError on a redeclared stream."""
        if stream in self.streams:
            raise TopologyError(f"[{self.component}] stream {stream!r} declared twice")
        self.streams[stream] = StreamDef(tuple(fields), direct)

    def declare_stream(self, stream: str, fields: list[str] | tuple[str, ...], direct: bool = False) -> None:
        """Declare ``fields`` on ``stream`` (Storm's ``declareStream``); see :meth:`declare`."""
        self.declare(fields, stream=stream, direct=direct)


class Component:
    """What spouts and bolts share: output declaration, component config, validation."""

    needs_tuple_ids = False
    """Its input tuples must carry ids that survive replays (a stateful bolt deduplicates by them)."""
    needs_same_task_replays = False
    """A replayed tuple must reach the task that saw the original: groupings that pick a task at random are refused."""
    needs_real_kafka: str | None = None
    """Why it cannot run on the test kit's in-memory log (:mod:`streams.testing`), naming what it needs; None: it can."""

    def validate(self, component_id: str) -> None:
        """Check the constructor's options; raise :class:`TopologyError` naming ``component_id``.

        Called by ``set_spout``/``set_bolt``; the default accepts all.
        """

    def validate_conf(self, component_id: str, conf: TopologyConfig) -> None:
        """Check the component against its resolved config; raise :class:`TopologyError` naming ``component_id``.

        Called on submit and when a worker starts (:func:`streams.model.checks.check_confs`);
        the default accepts all. A windowed bolt checks its window against the message timeout.
        """

    def validate_inputs(self, component_id: str, inputs: Mapping[tuple[str, str], tuple[str, ...]]) -> None:
        """Check the fields of the streams it subscribes to, ``(component, stream) -> fields``; raise :class:`TopologyError` naming ``component_id``.

        Called when the topology is frozen; the default accepts all. A :class:`~streams.JoinBolt`
        checks that every side declares its join field.
        """

    def hold(self) -> Hold:
        """What one task holds before acking (a window's count and time reach).

        The default, ``Hold()``, holds nothing: it acks as it goes. Spouts keep enough trees in flight
        for it (:meth:`streams.model.spec.Topology.hold`).
        """
        return Hold()

    def sink_topic(self, topology: str) -> str | None:
        """The fixed external topic this component writes its results to (a Kafka sink), if any; Squall creates it and ``squall run`` reads it."""
        return None

    def own_topics(self, topology: str, component: str, tasks: int) -> dict[str, int]:
        """Topics Squall creates for this component at submit, ``{name: partitions}``: by default its :meth:`sink_topic` with one partition."""
        sink = self.sink_topic(topology)
        return {} if sink is None else {sink: 1}

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare output streams; the default declares nothing."""

    def get_component_configuration(self) -> dict[str, Any] | None:
        """Component-level config (highest precedence), e.g. tick frequency."""
        return None

    def input_partitions(self, num_tasks: int) -> int:
        """Partitions of the component's own topic ``squall.T.<id>`` (default: one per task)."""
        return num_tasks
