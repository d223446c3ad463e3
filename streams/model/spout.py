"""The spout base class (Storm's ``ISpout``); its lifecycle is in :mod:`streams.model.component`."""

from __future__ import annotations

from typing import Any

from streams.model.collector import SpoutOutputCollector
from streams.model.component import Component
from streams.model.context import TopologyContext
from streams.model.spec import ComponentDef


class Spout(Component):
    """A source of tuples (Storm's ISpout). One copy runs per task (see the module docstring).

    ``next_tuple`` must not block for long: it emits zero or more tuples and returns.
    ``ack``/``fail`` receive the message id given to ``collector.emit``, on the same thread.
    """

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        """Called once per task copy, when its executor starts, before ``next_tuple``."""
        self.collector = collector

    def next_tuple(self) -> None:
        """Emit zero or more tuples and return (called in a loop while pending < max)."""
        raise NotImplementedError

    def wind_down(self) -> bool:
        """Called instead of ``next_tuple`` while the worker drains (SIGTERM: a rebalance, an update, a kill); returns whether it still has work in flight.

        For work that must not be left half done and needs no new input: a transactional spout
        commits the batches already processed (:class:`~streams.transactional.spout.TransactionalKafkaSpout`),
        so a drained worker leaves none to replay. The default has none: False.
        """
        return False

    def ack(self, msg_id: Any) -> None:
        """The tree rooted at ``msg_id`` was fully processed."""

    def fail(self, msg_id: Any) -> None:
        """The tree rooted at ``msg_id`` failed or timed out."""

    def close(self) -> None:
        """Called when the worker stops cleanly (SIGTERM: rebalance, kill, drain); never after a crash.

        Trees still in flight then (a drain waits for them first) are replayed by the task's
        next run.
        """

    def extend_topology(self, component_id: str, defs: list[ComponentDef]) -> None:
        """Rewrite the topology around this spout before it is frozen (Storm's ``BatchSubtopologyBuilder.extendTopology``).

        ``defs`` is every component's definition (copies, in declaration order), to change
        in place: wrap bolts, add subscriptions. ``TopologyBuilder.create_topology`` calls
        it once for each spout; the default does nothing. A transactional spout wraps every
        bolt in a coordinated bolt here
        (:func:`streams.transactional.wiring.wire_transactional`), so the builder never
        imports the transactional machinery. Raises TopologyError naming the component at
        fault.
        """
