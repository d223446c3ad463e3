"""A rolling update (``squall update``): which code each worker runs while a topology moves from one version to the next (pure).

Heron's ``update`` and Kafka Streams' rolling upgrades replace instances one at a time with their
state kept; Squall does it per worker, with the drain a ``rebalance`` already uses (SIGTERM: the
worker's spouts stop, its trees in flight finish, offsets, acker tables and bolt state are
committed), so nothing is replayed and no tree fails.

Every supervisor decides alone, from what all of them see (the ``started`` events, with the code
each worker runs, and the workers' live stats):

1. worker ``i`` that runs the old code is replaced once every worker before it in the roll's
   order (:func:`roll_order`: those that gain a component first, those that lose one last, by
   index otherwise) runs the new code and has been live for :data:`SETTLE_S` (:func:`worker_code`),
   so one worker is down at a time;
2. a worker that runs the new code keeps it, and a worker that is not running (it crashed, or
   its slot moved) starts on the new code: it is down anyway;
3. a ``--drain-all`` update (an incompatible change) stops every old worker at once; new ones
   start only once no worker of the old code is left (the supervisor holds them back);
4. a new worker that crashes before it is ready fails the update: the record rolls back onto
   the old code the same way (:func:`service.control.record.update_failed`), so the workers not
   yet replaced keep running the old code and the replaced ones are put back.

Every existing executor keeps its worker (:func:`keep_placement`): a new component's executors are
dealt onto the workers, a removed one's leave with its worker's turn. So the tasks a new worker
claims are those its predecessor held, and it starts as soon as that one has exited.

>>> from service.control.record import RollingUpdate
>>> roll = RollingUpdate(from_code=1, to_code=2, started_at=0.0)
>>> on_new = {0}.__contains__  # worker 0 already runs version 2
>>> [worker_code(roll, 2, i, running, on_new) for i, running in enumerate([2, 1, 1])]
[2, 2, 1]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from service.control.record import RollingUpdate
from service.control.scheduling import ExecutorAssignment, executor_tasks, is_spark_bolt
from service.exceptions import ControlError
from streams.model.spec import Topology
from streams.wire.naming import ACKER_COMPONENT

SETTLE_S = 3.0
"""How long a new worker must have been live before the next one is replaced (seconds): its executors
have read their partitions and published stats, so the topology never has two workers down."""


def worker_code(roll: RollingUpdate | None, current: int, worker: int, running: int | None, on_new: Callable[[int], bool]) -> int:
    """The code version worker ``worker`` should run now (see the module docstring).

    ``current``: the record's code version (the only one without an update). ``running``: the code
    it runs on this supervisor now (None: not running here). ``on_new(j)``: whether worker ``j``
    runs ``roll.to_code`` and has been live for :data:`SETTLE_S`.
    """
    if roll is None:
        return current
    if roll.drain_all or running is None or running == roll.to_code or running != roll.from_code:
        return roll.to_code
    order = roll.order if roll.order is not None else list(range(worker + 1))
    before = order[: order.index(worker)] if worker in order else order
    return roll.to_code if all(on_new(j) for j in before) else running


def roll_order(
    old: Sequence[Sequence[ExecutorAssignment]], new: Sequence[Sequence[ExecutorAssignment]], added: Iterable[str], removed: Iterable[str]
) -> list[int]:
    """The order workers are replaced in: those that gain a component first, those that lose one last, by index otherwise.

    A removed component's executors must outlive every old emitter that still sends it tuples (or
    their trees would time out), so their workers go last; a new component's should be up before
    the new code upstream emits to it (else its tuples wait in its topic), so theirs go first.
    ``old``/``new``: per worker, its executors under each code.

    >>> E = ExecutorAssignment
    >>> roll_order([[E("a", (0,))], [E("b", (0,))], [E("c", (0,))]], [[E("a", (0,))], [E("b", (0,)), E("d", (0,))]], ["d"], ["c"])
    [1, 0, 2]
    """
    gone, fresh = set(removed), set(added)

    def rank(i: int) -> int:
        if i < len(old) and {e.component for e in old[i]} & gone:
            return 2
        return 0 if i < len(new) and {e.component for e in new[i]} & fresh else 1

    return sorted(range(max(len(old), len(new))), key=lambda i: (rank(i), i))


def placement_json(workers: Sequence[Sequence[ExecutorAssignment]]) -> list[list[tuple[str, list[int]]]]:
    """A placement as the record keeps it: per worker, ``[component, [task, ...]]`` per executor."""
    return [[(e.component, list(e.tasks)) for e in w] for w in workers]


def placement_of(raw: Iterable[Iterable[Sequence[Any]]]) -> list[list[ExecutorAssignment]]:
    """The record's placement as executors per worker (:func:`placement_json`'s inverse)."""
    return [[ExecutorAssignment(str(c), tuple(int(t) for t in tasks)) for c, tasks in w] for w in raw]


def keep_placement(name: str, old: Sequence[Sequence[ExecutorAssignment]], new: Topology) -> list[list[ExecutorAssignment]]:
    """The workers' executors under ``new``, keeping every executor ``old`` places whose component stays.

    ``old[i]``: worker ``i``'s executors under the running code. A removed component's executors go;
    an added component's are dealt in declaration order onto the workers that would be left empty
    first, then round-robin from worker 0 (a SparkBolt gets a worker of its own, at the end), as
    Storm's even scheduler deals them. Acker executors stay where they are.

    Raises ControlError naming the worker when one would be left with no executor (a rolling
    update cannot remove a worker from the middle: ``--drain-all`` deals them again).
    """
    keep = set(new.components) | {ACKER_COMPONENT}
    placed = {e.component for w in old for e in w}
    workers = [[e for e in w if e.component in keep] for w in old]
    extra: list[ExecutorAssignment] = []
    spark: list[ExecutorAssignment] = []
    for cdef in new.components.values():
        if cdef.id in placed:
            continue
        if is_spark_bolt(cdef.obj):
            spark.append(ExecutorAssignment(cdef.id, tuple(range(cdef.num_tasks))))
            continue
        extra += [ExecutorAssignment(cdef.id, tasks) for tasks in executor_tasks(cdef.num_tasks, min(cdef.parallelism, cdef.num_tasks))]
    empty = [i for i, w in enumerate(workers) if not w]
    for i in empty:
        if extra:
            workers[i].append(extra.pop(0))
    if extra and not workers:
        workers.append([])
    for k, e in enumerate(extra):
        workers[k % len(workers)].append(e)
    while workers and not workers[-1]:
        workers.pop()
    for i, w in enumerate(workers):
        if not w:
            raise ControlError(f"[{name}] worker w{i} would have no executors left (its components are removed); use --drain-all to deal the workers again")
    return workers + [[e] for e in spark]


def roll_progress(workers: int, codes: Mapping[int, int], to_code: int) -> str:
    """One line for ``status``: which workers run which code version.

    ``codes``: worker -> the code version its running process runs (absent: not running).

    >>> roll_progress(3, {0: 2, 1: 1}, 2)
    '1 of 3 workers on version 2: w0 v2, w1 v1, w2 down'
    """
    done = sum(1 for w in range(workers) if codes.get(w) == to_code)
    each = ", ".join(f"w{w} v{codes[w]}" if w in codes else f"w{w} down" for w in range(workers))
    return f"{done} of {workers} workers on version {to_code}: {each}"


def worker_codes(seen: Iterable[Mapping[str, Any]]) -> dict[int, tuple[int, int]]:
    """``worker -> (code version, pid)`` of each worker whose last event is ``started`` (events of one topology, oldest first).

    >>> worker_codes([{"event": "started", "worker": 0, "code": 2, "pid": 7}, {"event": "started", "worker": 1, "pid": 8},
    ...               {"event": "crashed", "worker": 1, "pid": 8}])
    {0: (2, 7)}
    """
    last: dict[int, Mapping[str, Any]] = {}
    for e in seen:
        if e.get("event") in ("started", "stopped", "crashed", "fenced") and isinstance(e.get("worker"), int) and e["worker"] >= 0:
            last[int(e["worker"])] = e
    return {w: (int(e.get("code", 1)), int(e.get("pid", 0))) for w, e in sorted(last.items()) if e.get("event") == "started"}
