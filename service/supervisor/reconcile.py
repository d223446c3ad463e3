"""What a supervisor must do to make its workers match the desired state (pure).

Desired: for every topology that is not killed-and-due, each worker ``i`` whose slot this
supervisor owns, with its executors and their tasks. Running: the workers this supervisor
started. The decision: start what is desired and not running (unless it is backing off
after a crash or was given up on); stop what runs but is no longer desired, or whose
executors changed (``rebalance``) or whose code version did (``update``). A changed worker is stopped first and started again once
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

from collections.abc import Callable, Iterable, Mapping
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
    """A worker as desired: its executors (with their tasks), the record version that planned it, and the code version it runs."""

    key: WorkerKey
    executors: tuple[ExecutorAssignment, ...]
    version: int
    code: int = 1

    @property
    def components(self) -> list[str]:
        """The component ids of its executors."""
        return worker_components(self.executors)


@dataclass(frozen=True)
class Running:
    """A worker as it runs: its executors, whether a stop was already asked, and its code version."""

    executors: tuple[ExecutorAssignment, ...]
    stopping: bool
    code: int = 1


@dataclass
class Decision:
    """Which workers this supervisor starts and stops in one round."""

    start: list[WorkerSpec] = field(default_factory=list)
    stop: list[WorkerKey] = field(default_factory=list)


def desired_workers(
    records: Iterable[TopologyRecord],
    plans: Mapping[str, Mapping[int, list[list[ExecutorAssignment]]]],
    owned: set[int],
    now: float,
    code_of: Callable[[TopologyRecord, int], int] | None = None,
) -> dict[WorkerKey, WorkerSpec]:
    """The workers this supervisor should run.

    ``plans[name][code][i]`` lists worker ``i``'s executors under code version ``code`` (two codes
    while an update rolls); ``code_of(rec, i)``: the code worker ``i`` should run now
    (:func:`service.control.rolling.worker_code`; default: the record's). A topology with no plan
    (it failed to load) runs nowhere; a worker index the chosen code's plan lacks is not desired.
    """
    out: dict[WorkerKey, WorkerSpec] = {}
    for rec in records:
        codes = plans.get(rec.name)
        if not codes or rec.killed_by(now):
            continue
        for i in range(max(len(w) for w in codes.values())):
            if slot_of(rec.name, i) not in owned:
                continue
            code = code_of(rec, i) if code_of is not None else rec.code_version
            workers = codes.get(code)
            if workers is not None and i < len(workers):
                key = WorkerKey(rec.name, i)
                out[key] = WorkerSpec(key, tuple(workers[i]), rec.version, code)
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
        if not run.stopping and (spec is None or spec.executors != run.executors or spec.code != run.code):
            d.stop.append(key)
    for key, spec in desired.items():
        if key not in running and key not in gave_up and now >= backoff_until.get(key, 0.0):
            d.start.append(spec)
    return d
