"""Faults to inject into a kit run: fail a tuple, raise in a bolt, drop or delay an ack, crash a task.

Each rule names a component and, for tuple faults, which tuples (``where``, a predicate on
the input :class:`~streams.model.tuple.Tuple`; None: any) and how many times (``times``).
Rules are tried in the order given; a tuple meets at most one. System tuples (ticks, batch
markers) never match.

    >>> from streams.testing import Faults
    >>> faults = Faults().fail("split", where=lambda t: t[0] == "the cat").crash("count", after=10)
    >>> [r.kind for r in faults.rules]
    ['fail', 'crash']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streams.model.tuple import Tuple

Where = Callable[[Tuple], bool]


@dataclass
class FaultRule:
    """One fault: ``kind`` is ``fail``, ``raise``, ``drop_ack``, ``delay_ack`` or ``crash``.

    ``left``: matches still to make; ``seconds``: a delayed ack's delay (simulated seconds);
    ``task``: the crashed task's index in its component; ``after``: tuples the task executes
    (a bolt) or emits (a spout) in its life before it crashes; ``error``: what ``raise`` raises.
    """

    kind: str
    component: str
    where: Where | None = None
    left: int = 1
    seconds: float = 0.0
    task: int = 0
    after: int = 1
    error: Exception | None = None

    def matches(self, t: Tuple) -> bool:
        """This tuple meets the rule (and the rule has matches left)."""
        return self.left > 0 and (self.where is None or bool(self.where(t)))


class Faults:
    """A chainable list of :class:`FaultRule`, for :func:`streams.testing.run_topology` or :class:`streams.testing.LocalTopology`.

    As Storm's testing API injects failures: by tuple, in a bolt. Each run works on its own
    copy, so one ``Faults`` can serve several runs.
    """

    def __init__(self) -> None:
        self.rules: list[FaultRule] = []

    def fail(self, component: str, where: Where | None = None, *, times: int = 1) -> Faults:
        """``component`` fails the matching tuple instead of executing it (``collector.fail``): its tree fails and the spout replays it."""
        self.rules.append(FaultRule("fail", component, where, times))
        return self

    def raise_in(self, component: str, where: Where | None = None, *, times: int = 1, error: Exception | None = None) -> Faults:
        """``execute`` raises ``error`` (default RuntimeError) on the matching tuple: the executor fails it and records the error."""
        self.rules.append(FaultRule("raise", component, where, times, error=error))
        return self

    def drop_ack(self, component: str, where: Where | None = None, *, times: int = 1) -> Faults:
        """``component`` executes the matching tuple, but its ack never reaches the acker: the tree times out."""
        self.rules.append(FaultRule("drop_ack", component, where, times))
        return self

    def delay_ack(self, component: str, seconds: float, where: Where | None = None, *, times: int = 1) -> Faults:
        """The matching tuple's ack reaches the acker ``seconds`` (simulated) after the bolt acked it."""
        self.rules.append(FaultRule("delay_ack", component, where, times, seconds=seconds))
        return self

    def crash(self, component: str, task: int = 0, *, after: int = 1) -> Faults:
        """Task ``task`` (index) of ``component`` dies after executing (bolt) or emitting (spout) ``after`` tuples.

        As a ``kill -9``: what it had not flushed (outputs, acks) is lost, a fresh copy is
        prepared, and it reads its input again from its last committed offset.
        """
        self.rules.append(FaultRule("crash", component, task=task, after=after))
        return self

    def tuple_rule(self, component: str, t: Tuple) -> FaultRule | None:
        """The first tuple rule of ``component`` that ``t`` meets, consumed (None: no fault for it)."""
        if t.stream.startswith("__"):
            return None
        for rule in self.rules:
            if rule.kind != "crash" and rule.component == component and rule.matches(t):
                rule.left -= 1
                return rule
        return None

    def crash_rule(self, component: str, task: int) -> FaultRule | None:
        """The crash still to happen to task index ``task`` of ``component``."""
        for rule in self.rules:
            if rule.kind == "crash" and rule.component == component and rule.task == task and rule.left > 0:
                return rule
        return None

    def components(self) -> set[str]:
        """Every component a rule names."""
        return {r.component for r in self.rules}


def injected_error(rule: FaultRule, component: str, t: Tuple) -> Exception:
    """The exception a ``raise`` rule raises on ``t``."""
    return rule.error if rule.error is not None else RuntimeError(f"[{component}] injected fault on {t.where}: {list(t.values)!r}")


class Raiser:
    """A stand-in bolt whose ``execute`` raises: the executor's own error path runs (fail, count, record)."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def execute(self, t: Any) -> None:
        """Raise the injected error."""
        raise self.error
