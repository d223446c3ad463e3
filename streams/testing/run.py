"""``run_topology``: feed a topology, run it in this process until every tree settled, return what it did (bytewax's ``run_main``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from streams.model.spec import Topology
from streams.testing.clock import SimulatedTime
from streams.testing.faults import Faults
from streams.testing.local import LocalTopology
from streams.testing.result import RunResult
from streams.testing.tasks import Input


def run_topology(
    topology: Topology,
    inputs: Mapping[str, Iterable[Input]] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
    time: SimulatedTime | None = None,
    faults: Faults | None = None,
    seed: int = 0,
    max_s: float | None = None,
) -> RunResult:
    """Run ``topology`` in this process on ``inputs`` until every tree settled; return what it did.

    ``inputs``: ``spout id -> records`` for KafkaSpouts (see :data:`Input`). The run feeds
    them, runs until every input is emitted and every tree is acked, failed for good, or
    dead-lettered (advancing simulated time as needed, at most ``max_s`` simulated seconds),
    then stops the tasks (``cleanup``) and returns a :class:`~streams.testing.result.RunResult`.

    Raises KitError (bad inputs or faults, a component that needs a real Kafka), NotSettledError.

    >>> from examples.wordcount import topology
    >>> result = run_topology(topology(), {"lines": ["the cat", "The dog"]})
    >>> result.output() == {"the": 2, "cat": 1, "dog": 1}
    True
    >>> result.final_outcomes("lines")
    Counter({'acked': 2})
    """
    with LocalTopology(topology, config=config, time=time, faults=faults, seed=seed) as local:
        for spout, records in (inputs or {}).items():
            local.feed(spout, records)
        local.settle(max_s)
    return local.result()
