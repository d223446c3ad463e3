"""Squall's test kit: run a topology in one process, on given input, with simulated time and faults.

Storm's ``Testing`` API (``completeTopology``, ``FeederSpout``, simulated time) and
``bytewax.testing``, for Squall: no broker, the runtime's own collectors, groupings, acker
ledger, windows and state (:mod:`streams.testing.local` says where it differs).

* :func:`run_topology` -- feed, run until every tree settled, return a :class:`RunResult`.
* :func:`run_stream` -- one Stream API pipeline on a list of values; what it emits.
* :class:`LocalTopology` -- the same, step by step: :meth:`~LocalTopology.feed`,
  :meth:`~LocalTopology.run`, :meth:`~LocalTopology.advance`, :meth:`~LocalTopology.result`.
* :class:`Faults` -- fail a tuple, raise in a bolt, drop or delay an ack, crash a task.
* :class:`SimulatedTime` -- the clock every tick, timeout and window reads.
* A pytest plugin (``pytest -p streams.testing``): fixtures ``squall_time`` and ``squall_kit``
  (:mod:`streams.testing.plugin`).

A tutorial: docs/testing.md.
"""

from __future__ import annotations

import contextlib

from streams.testing.clock import SimulatedTime
from streams.testing.exceptions import KitError, NotSettledError
from streams.testing.faults import FaultRule, Faults
from streams.testing.local import LocalTopology, run_topology
from streams.testing.memlog import Record
from streams.testing.result import DeadLetter, Emitted, RunResult, TaskError
from streams.testing.stream_api import run_stream

with contextlib.suppress(ImportError):  # the fixtures need pytest; the kit itself does not
    from streams.testing.plugin import squall_kit, squall_time

__all__ = [
    "DeadLetter",
    "Emitted",
    "FaultRule",
    "Faults",
    "KitError",
    "LocalTopology",
    "NotSettledError",
    "Record",
    "RunResult",
    "SimulatedTime",
    "TaskError",
    "run_stream",
    "run_topology",
    "squall_kit",
    "squall_time",
]
