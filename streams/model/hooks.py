"""Task hooks: code that runs on every emit, ack, fail and execute of a task (Storm's ``ITaskHook``).

A hook sees what a task does without changing the component: metrics of your own, auditing,
sampling tuples into a log, or a test's observation and fault injection (the test kit's
own observer is one, :class:`streams.testing.observe.KitHook`). Add one per task with
:meth:`streams.TopologyContext.add_task_hook` (in ``open`` or ``prepare``), or to every task
of the topology with ``topology.auto.task.hooks``: a list of ``"module:Class"`` (or
``"module.Class"``) names, each instantiated with no arguments once per task.

Storm's hook points, in snake_case: :meth:`TaskHook.emit`, :meth:`~TaskHook.spout_ack`,
:meth:`~TaskHook.spout_fail`, :meth:`~TaskHook.bolt_execute`, :meth:`~TaskHook.bolt_ack`,
:meth:`~TaskHook.bolt_fail`, plus ``prepare`` and ``cleanup``. Each is called on the task's
own thread, after what it reports happened (``bolt_ack``: as the ack is given, before it is
sent, so that a hook may hold it: :meth:`BoltAckInfo.hold`). A hook that raises stops the
task's executor, as an exception in the component would: keep hooks cheap and total.

    >>> from collections import Counter
    >>> from streams import BasicBolt, KafkaSpout, RecordTranslator, TopologyBuilder
    >>> from streams.testing import run_topology
    >>> class CountEmits(TaskHook):
    ...     def __init__(self):
    ...         self.by_stream = Counter()
    ...     def emit(self, info):
    ...         self.by_stream[info.stream] += 1
    >>> hook = CountEmits()
    >>> class Split(BasicBolt):
    ...     def prepare(self, conf, context):
    ...         context.add_task_hook(hook)
    ...     def declare_output_fields(self, declarer):
    ...         declarer.declare(["word"])
    ...     def execute(self, tuple, collector):
    ...         for w in tuple[0].split():
    ...             collector.emit([w])
    >>> b = TopologyBuilder()
    >>> _ = b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")))
    >>> _ = b.set_bolt("split", Split()).shuffle_grouping("lines")
    >>> _ = run_topology(b.create_topology("hooked"), {"lines": ["a b", "c"]})
    >>> hook.by_stream  # the three words split emitted
    Counter({'default': 3})
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streams.exceptions import TopologyError
from streams.model.tuple import Tuple


@dataclass(frozen=True, slots=True)
class EmitInfo:
    """One emit (Storm's ``EmitInfo``).

    Attributes:
      values: the emitted values.
      stream: the stream id.
      task_id: the emitting task (global id).
      out_tasks: the global task ids it was sent to (one for ``emit_direct``).
      anchors: a bolt's emit: the input tuples it is anchored to (empty: unanchored, or a spout).
      message_id: a spout's emit: its message id (None: untracked, or a bolt).
    """

    values: list[Any]
    stream: str
    task_id: int
    out_tasks: list[int]
    anchors: tuple[Tuple, ...] = ()
    message_id: Any = None


@dataclass(frozen=True, slots=True)
class SpoutAckInfo:
    """A spout tree fully processed (Storm's ``SpoutAckInfo``).

    ``message_id``, the spout's ``spout_task_id`` and ``complete_latency_s`` (seconds from emit
    to ack; 0 for an untracked emit).
    """

    message_id: Any
    spout_task_id: int
    complete_latency_s: float


@dataclass(frozen=True, slots=True)
class SpoutFailInfo:
    """A spout tree failed or timed out (Storm's ``SpoutFailInfo``).

    ``message_id``, ``spout_task_id``, ``fail_latency_s`` (seconds from emit) and ``timed_out``.
    """

    message_id: Any
    spout_task_id: int
    fail_latency_s: float
    timed_out: bool = False


@dataclass(frozen=True, slots=True)
class BoltExecuteInfo:
    """``execute`` returned (Storm's ``BoltExecuteInfo``).

    The input ``tuple``, ``executing_task_id``, ``execute_latency_s`` (seconds) and ``error``,
    the exception it raised (None: it returned).
    """

    tuple: Tuple
    executing_task_id: int
    execute_latency_s: float
    error: BaseException | None = None


@dataclass(slots=True)
class BoltAckInfo:
    """A bolt acked ``tuple`` (Storm's ``BoltAckInfo``): ``acking_task_id`` and ``process_latency_s`` (seconds from receipt; 0 when not timed).

    A hook may :meth:`hold` the ack: it then leaves the task only when the hook calls the
    function ``hold`` returned, or never (the tree times out). That is how a test loses or
    delays an ack (the test kit's ``drop_ack`` and ``delay_ack``).
    """

    tuple: Tuple
    acking_task_id: int
    process_latency_s: float
    release: Callable[[], None] = field(repr=False, default=lambda: None)
    held: bool = False

    def hold(self) -> Callable[[], None]:
        """Keep the ack from the acker; returns the function that sends it (call it at most once)."""
        self.held = True
        return self.release


@dataclass(frozen=True, slots=True)
class BoltFailInfo:
    """A bolt failed ``tuple`` (Storm's ``BoltFailInfo``).

    ``failing_task_id``, ``fail_latency_s`` (seconds from receipt; 0 when not timed) and
    ``why`` (the fail's reason, as the fail op carries it).
    """

    tuple: Tuple
    failing_task_id: int
    fail_latency_s: float
    why: str = ""


class TaskHook:
    """Storm's ``ITaskHook``: override the points you need; each default does nothing.

    See the module docstring for when each is called and how to add a hook.
    """

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        """Called once, when the hook is added to a task: its config as a dict (Storm's keys) and its :class:`~streams.model.context.TopologyContext`."""

    def cleanup(self) -> None:
        """Called when the task stops cleanly."""

    def emit(self, info: EmitInfo) -> None:
        """A tuple was emitted (after it was sent)."""

    def spout_ack(self, info: SpoutAckInfo) -> None:
        """A spout tree was fully processed (before the spout's ``ack``)."""

    def spout_fail(self, info: SpoutFailInfo) -> None:
        """A spout tree failed or timed out (before the spout's ``fail``)."""

    def bolt_execute(self, info: BoltExecuteInfo) -> None:
        """A bolt's ``execute`` returned or raised."""

    def bolt_ack(self, info: BoltAckInfo) -> None:
        """A bolt acked a tuple (before the ack is sent; see :meth:`BoltAckInfo.hold`)."""

    def bolt_fail(self, info: BoltFailInfo) -> None:
        """A bolt failed a tuple (after the fail was sent)."""


def hook_class(name: str, component: str) -> type[TaskHook]:
    """The class ``"module:Class"`` (or ``"module.Class"``) of ``topology.auto.task.hooks``.

    Raises TopologyError naming the component and the entry when it cannot be imported or is
    not a :class:`TaskHook`.

    >>> hook_class("streams.model.hooks:TaskHook", "split").__name__
    'TaskHook'
    >>> hook_class("streams.model.hooks.Nope", "split")
    Traceback (most recent call last):
    ...
    streams.exceptions.TopologyError: [split] topology.auto.task.hooks entry 'streams.model.hooks.Nope': module 'streams.model.hooks' has no attribute 'Nope'
    """
    module, sep, attr = name.partition(":") if ":" in name else name.rpartition(".")
    if not sep or not module or not attr:
        raise TopologyError(f"[{component}] topology.auto.task.hooks entry {name!r}: give 'module:Class'")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise TopologyError(f"[{component}] topology.auto.task.hooks entry {name!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, TaskHook)):
        raise TopologyError(f"[{component}] topology.auto.task.hooks entry {name!r} is not a streams.TaskHook subclass")
    return cls
