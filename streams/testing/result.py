"""What a kit run returns: the tuples emitted, each tree's outcomes, dead letters, errors and outputs."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from streams.monitoring.errors import ErrorReport

OUTCOMES = ("acked", "failed", "timed_out", "restarted", "dead_lettered")
"""A tree's outcomes, in a tree's list in the order they happened; ``restarted`` is a tree lost
in flight with a crashed spout task (replayed by its next life); ``dead_lettered`` is the
spout giving the record up (after ``squall.spout.max.retries`` replays, or poison), and comes
after the failure that caused it."""


@dataclass(frozen=True)
class Emitted:
    """One emit call.

    ``task``: the global task id that emitted; ``anchors``: the values of the input tuples it
    was anchored to (a bolt's; empty: unanchored or a spout's); ``message_ids``: the spout
    message ids of the trees it belongs to (a spout emit: its own, if tracked).
    """

    component: str
    task: int
    stream: str
    values: tuple[Any, ...]
    anchors: tuple[tuple[Any, ...], ...] = ()
    message_ids: tuple[Any, ...] = ()


@dataclass(frozen=True)
class DeadLetter:
    """A record written to the dead-letter topic, with what its headers say.

    Which component gave it up, where it was read (topic, partition, offset), after how many
    failed attempts, and why.
    """

    component: str
    topic: str
    partition: int
    offset: int
    attempts: int
    reason: str
    value: bytes | None


@dataclass(frozen=True)
class TaskError:
    """An exception a task raised in ``execute`` (the tuple was failed).

    Attributes:
      component: the bolt's component id.
      task: the global task id.
      error_type: the exception's class name, e.g. ``"ValueError"``.
      message: ``str(exception)``.
      values: the input tuple's values.
    """

    component: str
    task: int
    error_type: str
    message: str
    values: tuple[Any, ...]


@dataclass
class RunResult:
    """Everything a kit run observed.

    Attributes:
      emitted: ``(component, stream) -> [Emitted]`` in emit order (replays included).
      trees: ``spout -> {message id -> [outcome, ...]}`` (see :data:`OUTCOMES`); a KafkaSpout's
        message ids are ``KafkaMessageId(topic, partition, offset)``.
      dead_letters: in the order written.
      errors: exceptions raised in ``execute``.
      reports: every error report, as ``squall errors`` shows them but none throttled
        (:class:`~streams.monitoring.errors.ErrorReport`: exceptions, fails with a reason,
        poison records), in the order made.
      outputs: ``set_output`` topic name (``{topology}`` replaced) -> its records folded as
        ``squall run`` writes its output file (``sum`` or ``last`` per key).
      output_records: the same topics' records, as JSON objects, in order. A stateful bolt's
        ``set_state_output`` is in ``outputs`` too, as ``<topology>.<component>``.
      sinks: the records KafkaBolts wrote, per topic (:class:`~streams.testing.memlog.Record`).
      crashes: ``(component, task index)`` of each injected crash.
      inputs: ``spout -> [KafkaMessageId]`` of each record fed, in feed order.
      simulated_s: simulated seconds the run took.
    """

    emitted: dict[tuple[str, str], list[Emitted]] = field(default_factory=dict)
    trees: dict[str, dict[Any, list[str]]] = field(default_factory=dict)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    errors: list[TaskError] = field(default_factory=list)
    reports: list[ErrorReport] = field(default_factory=list)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    output_records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    sinks: dict[str, list[Any]] = field(default_factory=dict)
    crashes: list[tuple[str, int]] = field(default_factory=list)
    inputs: dict[str, list[Any]] = field(default_factory=dict)
    simulated_s: float = 0.0

    def values(self, component: str, stream: str = "default") -> list[tuple[Any, ...]]:
        """The values of every tuple ``component`` emitted on ``stream``, in order (replays included).

        >>> RunResult(emitted={("split", "default"): [Emitted("split", 1, "default", ("a",))]}).values("split")
        [('a',)]
        """
        return [e.values for e in self.emitted.get((component, stream), [])]

    def output(self, topic: str | None = None) -> dict[str, Any]:
        """The folded output of ``topic``; without ``topic``, of the topology's only output.

        Raises KeyError naming the outputs for an unknown topic, or when there are several and none is named.
        """
        if topic is None:
            if not self.outputs:
                raise KeyError(
                    "no output yet: the topology has no set_output or set_state_output, or nothing reached it"
                    " (a stateful bolt's state appears once a checkpoint saved it: advance() past topology.state.checkpoint.interval.ms)"
                )
            if len(self.outputs) != 1:
                raise KeyError(f"the topology has outputs {sorted(self.outputs)}: name one")
            return next(iter(self.outputs.values()))
        if topic not in self.outputs:
            raise KeyError(f"no output {topic!r} (outputs: {sorted(self.outputs)})")
        return self.outputs[topic]

    def final_outcomes(self, spout: str) -> Counter[str]:
        """How many of ``spout``'s trees ended in each outcome (a replayed tree counts once, by its last)."""
        return Counter(outs[-1] for outs in self.trees.get(spout, {}).values() if outs)

    def input_outcomes(self, spout: str) -> list[list[str]]:
        """The outcomes of each record fed to ``spout``, in feed order (``[]``: never settled)."""
        trees = self.trees.get(spout, {})
        return [trees.get(mid, []) for mid in self.inputs.get(spout, [])]

    def replays(self, spout: str) -> int:
        """Trees of ``spout`` emitted again, by any of the README's causes: a failure, a timeout, or a restart.

        Each outcome of a record but its last is followed by a replay: ``failed`` and
        ``timed_out`` (the spout replays it), ``restarted`` (an injected spout crash lost the
        tree in flight; the next life replays from the committed offset), and ``acked`` (acked
        but not yet committed when the spout crashed). A tree given up to the dead-letter topic
        is not emitted again.
        """
        return sum(max(0, sum(1 for o in outs if o != "dead_lettered") - 1) for outs in self.trees.get(spout, {}).values())
