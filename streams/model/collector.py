"""The collectors users call, as Protocols (Storm's ``task/OutputCollector`` API side).

A bolt emits, acks and fails through an :class:`OutputCollector`; a spout emits through a
:class:`SpoutOutputCollector`. The implementations, with Storm's anchoring algebra and the
produce path, are the runtime's (:mod:`streams.runtime.collectors`, Storm's
``executor/bolt/BoltOutputCollectorImpl``); user code never names them. Collectors are
not thread-safe: call them only from the executor's thread (see :mod:`streams.model.component`).

Example (any object with these methods will do in a unit test of a bolt)::

    >>> from streams.model.tuple import Tuple
    >>> class Recorder:
    ...     def __init__(self):
    ...         self.emitted, self.acked = [], []
    ...     def emit(self, values, anchors=None, stream="default"):
    ...         self.emitted.append((stream, values))
    ...         return [0]
    ...     def emit_direct(self, task, values, anchors=None, stream="default"): ...
    ...     def ack(self, tuple): self.acked.append(tuple)
    ...     def fail(self, tuple, reason=None): ...
    ...     def reset_timeout(self, tuple): ...
    ...     def report_error(self, error, tuple=None): ...
    >>> isinstance(Recorder(), OutputCollector)
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from streams.model.tuple import DEFAULT_STREAM, Tuple

Anchors = Tuple | Sequence[Tuple] | None
"""What an emit is anchored to: one tuple, several (multi-anchoring), or None (untracked)."""


@runtime_checkable
class OutputCollector(Protocol):
    """A bolt task's collector (Storm's ``OutputCollector``)."""

    def emit(self, values: list[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``values`` on ``stream`` anchored to ``anchors``; returns the global task ids it was sent to.

        Raises FatalError on an undeclared or direct stream.
        """
        ...

    def emit_direct(self, task: int, values: list[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> None:
        """Emit to one global ``task`` on a stream declared direct. Raises FatalError."""
        ...

    def ack(self, tuple: Tuple) -> None:  # noqa: A002 - Storm's name
        """Ack ``tuple`` (a second ack or fail of the same tuple is ignored)."""
        ...

    def fail(self, tuple: Tuple, reason: str | None = None) -> None:  # noqa: A002
        """Fail ``tuple``: every tree it belongs to fails and its spout tuple is replayed.

        ``reason``: why, recorded as the component's error (cause ``fail``; ``squall errors``).
        """
        ...

    def reset_timeout(self, tuple: Tuple) -> None:  # noqa: A002
        """Restart the timeout of every tree ``tuple`` belongs to (Storm's ``resetTimeout``)."""
        ...

    def report_error(self, error: BaseException | str, tuple: Tuple | None = None) -> None:  # noqa: A002
        """Record ``error`` as the component's error without failing anything (Storm's ``reportError``).

        An exception is cause ``exception``, a string a fail's reason (cause ``fail``);
        ``tuple``: the input it concerns. Shown by ``squall errors`` and counted in
        ``squall_errors_by_type_total`` (:mod:`streams.monitoring.errors`).
        """
        ...


@runtime_checkable
class BatchTree(Protocol):
    """The one tuple tree of a transactional batch (see :meth:`SpoutOutputCollector.open_tree`)."""

    def emit(self, values: list[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``values`` on ``stream`` in this batch; returns the global target tasks."""
        ...

    def emit_direct(self, task: int, values: list[Any], stream: str) -> None:
        """Emit to one global ``task`` on a direct stream, in this batch."""
        ...

    def close(self) -> int:
        """Send the tree's ``init`` and start tracking it; returns the root id."""
        ...


@runtime_checkable
class SpoutOutputCollector(Protocol):
    """A spout task's collector (Storm's ``SpoutOutputCollector``)."""

    def emit(self, values: list[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit a spout tuple; with a ``msg_id`` (and ackers) it is tracked as a new tree, and ``spout.ack(msg_id)`` or ``spout.fail(msg_id)`` follows.

        Returns the target tasks.
        """
        ...

    def emit_direct(self, task: int, values: list[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> None:
        """Emit to one global ``task`` on a direct stream (tracked under ``msg_id`` if given)."""
        ...

    def emit_tree(self, tuples: Sequence[tuple[str, list[Any]]], msg_id: Any) -> list[int]:
        """Emit several ``(stream, values)`` tuples as one tree under ``msg_id``; its weight towards ``topology.max.spout.pending`` is ``len(tuples)``."""
        ...

    def open_tree(self, msg_id: Any, batch: tuple[int, int]) -> BatchTree:
        """Start the one tree of batch ``(txid, attempt)``. Raises FatalError without ackers."""
        ...
