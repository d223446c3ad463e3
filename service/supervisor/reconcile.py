"""What a supervisor must do to make its workers match the desired state (pure).

Desired: for every topology that is not killed-and-due, each worker ``i`` whose slot this
supervisor owns, with its executors and their tasks. Running: the workers this supervisor
started. The decision: start what is desired and not running (unless it is backing off
after a crash or was given up on); stop what runs but is no longer desired, or whose
executors changed (``rebalance``). A changed worker is stopped first and started again once
it has exited. The daemon then starts a worker only when no other process still claims its
tasks (:mod:`service.control.claims`) and its slot has settled.

>>> lines, split = ExecutorAssignment("lines", (0,)), ExecutorAssignment("split", (0,))
>>> want = {WorkerKey("wc", 0): WorkerSpec(WorkerKey("wc", 0), (lines, split), 1)}
>>> [s.key for s in decide(want, {}, {}, set(), now=0.0).start]
[WorkerKey(topology='wc', worker=0)]
>>> running = {WorkerKey("wc", 0): Running((lines,), stopping=False)}
>>> decide(want, running, {}, set(), now=0.0).stop
[WorkerKey(topology='wc', worker=0)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from service.control.record import TopologyRecord
from service.control.scheduling import ExecutorAssignment, worker_components
from service.control.slots import slot_of


class WorkerKey(NamedTuple):
    """A worker of a topology: ``(topology name, worker index)``."""

    topology: str
    worker: int


@dataclass(frozen=True)
class WorkerSpec:
    """A worker as desired: its executors (with their tasks) and the record version that planned it."""

    key: WorkerKey
    executors: tuple[ExecutorAssignment, ...]
    version: int

    @property
    def components(self) -> list[str]:
        """The component ids of its executors."""
        return worker_components(self.executors)


@dataclass(frozen=True)
class Running:
    """A worker as it runs: its executors, and whether a stop was already asked."""

    executors: tuple[ExecutorAssignment, ...]
    stopping: bool


@dataclass
class Decision:
    """Which workers this supervisor starts and stops in one round."""

    start: list[WorkerSpec] = field(default_factory=list)
    stop: list[WorkerKey] = field(default_factory=list)


def desired_workers(
    records: Iterable[TopologyRecord], plans: Mapping[str, list[list[ExecutorAssignment]]], owned: set[int], now: float
) -> dict[WorkerKey, WorkerSpec]:
    """The workers this supervisor should run: ``plans[name][i]`` lists worker ``i``'s executors; a topology with no plan (it failed to load) runs nowhere."""
    out: dict[WorkerKey, WorkerSpec] = {}
    for rec in records:
        workers = plans.get(rec.name)
        if workers is None or rec.killed_by(now):
            continue
        for i, comps in enumerate(workers):
            if slot_of(rec.name, i) in owned:
                key = WorkerKey(rec.name, i)
                out[key] = WorkerSpec(key, tuple(comps), rec.version)
    return out


def decide(
    desired: Mapping[WorkerKey, WorkerSpec],
    running: Mapping[WorkerKey, Running],
    backoff_until: Mapping[WorkerKey, float],
    gave_up: set[WorkerKey],
    now: float,
) -> Decision:
    """Start and stop lists for this round (see the module docstring)."""
    d = Decision()
    for key, run in running.items():
        spec = desired.get(key)
        if not run.stopping and (spec is None or spec.executors != run.executors):
            d.stop.append(key)
    for key, spec in desired.items():
        if key not in running and key not in gave_up and now >= backoff_until.get(key, 0.0):
            d.start.append(spec)
    return d
