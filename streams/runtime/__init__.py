"""The executors (Storm's ``executor/``).

The base, the bolt and spout executors, the collector implementations, routing, trees in
flight and the pending bound.

The top of ``streams``' data plane: imports every layer below it, never
:mod:`streams.transactional` (a transactional spout is just a :class:`~streams.model.spout.Spout`
to the spout executor).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.lazy import lazy_exports

if TYPE_CHECKING:
    from streams.runtime.bolt import BoltExecutor
    from streams.runtime.collectors import SpoutOutputCollectorImpl
    from streams.runtime.executor import Executor, ExecutorEnv
    from streams.runtime.inflight import InFlightTrees
    from streams.runtime.pending_bound import FixedBound
    from streams.runtime.routing import Router
    from streams.runtime.spout_tasks import SpoutTask, SpoutTasks
    from streams.runtime.transfer import TupleTransfer

__all__ = [
    "BoltExecutor",
    "Executor",
    "ExecutorEnv",
    "FixedBound",
    "InFlightTrees",
    "Router",
    "SpoutOutputCollectorImpl",
    "SpoutTask",
    "SpoutTasks",
    "TupleTransfer",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "BoltExecutor": "streams.runtime.bolt",
        "SpoutOutputCollectorImpl": "streams.runtime.collectors",
        "Executor": "streams.runtime.executor",
        "ExecutorEnv": "streams.runtime.executor",
        "Router": "streams.runtime.routing",
        "InFlightTrees": "streams.runtime.inflight",
        "FixedBound": "streams.runtime.pending_bound",
        "SpoutTask": "streams.runtime.spout_tasks",
        "SpoutTasks": "streams.runtime.spout_tasks",
        "TupleTransfer": "streams.runtime.transfer",
    },
)
