"""Storm's Nimbus scheduling: which tasks each executor runs, which executors each worker hosts, and the typed plan every worker process reads.

An executor owns a fixed, contiguous range of its component's tasks, as in Storm (``executor
-> [start-task, end-task]``). Tasks are the partitions of the component's input topic, so an
executor reads exactly its partitions with ``assign()``, never through a Kafka group
rebalance. What moves tasks is a new plan (``rebalance``) or a restarted worker, and the
control plane makes sure two running executors never claim the same task
(:mod:`service.control.claims`).

Why not Kafka groups: on the embedded broker a member that leaves while its group is
forming, and is that group's leader, wedges the group for good (its coordinator keeps the
departed leader; every SyncGroup then fails with "rebalance in progress"). A worker restart
makes every executor leave at once, which is exactly that. And a short broker pause
expires sessions, and each rebalance then re-reads everything uncommitted. Fixed
assignments have neither problem, on any Kafka.

Executors are dealt round-robin onto ``topology.workers`` processes (spouts, then bolts,
then ackers), as Storm's even scheduler does (:func:`plan_workers`); :func:`worker_plan`
makes the :class:`WorkerPlan` that ``python -m service.worker PLAN INDEX`` reads.

>>> executor_tasks(4, 3)
[(0, 1), (2,), (3,)]
>>> executor_tasks(2, 2)
[(0,), (1,)]
>>> a = ExecutorAssignment("count", (0, 1))
>>> ExecutorAssignment.from_json(a.to_json()) == a
True
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from streams.config import TopologyConfig
from streams.model.spec import Topology
from streams.wire.naming import ACKER_COMPONENT


class ExecutorAssignment(NamedTuple):
    """One executor of a worker.

    Its component id and the task indexes it owns (each is a partition of the component's
    input topic; for ``__acker``, of ``__acker``).
    """

    component: str
    tasks: tuple[int, ...]

    def to_json(self) -> list[Any]:
        """``[component, [task, ...]]`` (the worker plan's form)."""
        return [self.component, list(self.tasks)]

    @staticmethod
    def from_json(raw: Sequence[Any]) -> ExecutorAssignment:
        """Parse ``[component, [task, ...]]``. Raises ValueError on another shape."""
        if len(raw) != 2 or not isinstance(raw[0], str) or not isinstance(raw[1], list):
            raise ValueError(f"executor assignment must be [component, [tasks]], got {raw!r}")
        return ExecutorAssignment(raw[0], tuple(int(t) for t in raw[1]))


def executor_tasks(num_tasks: int, executors: int) -> list[tuple[int, ...]]:
    """Split tasks ``0 .. num_tasks-1`` into ``executors`` contiguous ranges.

    The first ``num_tasks % executors`` ranges get one task more (Storm's even split).
    Raises ValueError unless ``1 <= executors <= num_tasks``.
    """
    if not 1 <= executors <= num_tasks:
        raise ValueError(f"executors must be 1..{num_tasks} (the task count), got {executors}")
    base, extra = divmod(num_tasks, executors)
    out: list[tuple[int, ...]] = []
    start = 0
    for k in range(executors):
        size = base + (1 if k < extra else 0)
        out.append(tuple(range(start, start + size)))
        start += size
    return out


def worker_components(worker: Sequence[ExecutorAssignment]) -> list[str]:
    """The component ids of a worker's executors, one per executor, in plan order."""
    return [e.component for e in worker]


def is_spark_bolt(obj: Any) -> bool:
    """True for a :class:`~streams.spark.bolt.SparkBolt` (its own worker, one executor)."""
    from streams.spark.bolt import SparkBolt  # pyspark is optional: only its bolt module knows it

    return isinstance(obj, SparkBolt)


def plan_workers(topology: Topology, conf: TopologyConfig) -> list[list[ExecutorAssignment]]:
    """``workers[i]`` = the executors of worker ``i``, each with its fixed tasks.

    Executors are dealt round-robin (spouts, then bolts, then ackers), as Storm's even
    scheduler does; a component's executors own contiguous task ranges
    (:func:`executor_tasks`). A SparkBolt gets a worker of its own (its Spark driver), which
    runs all its tasks. The faust acker runtime assigns its tasks through its own Kafka
    group, so its one executor lists every acker task.
    """
    executors: list[ExecutorAssignment] = []
    spark: list[ExecutorAssignment] = []
    for cdef in topology.components.values():
        if is_spark_bolt(cdef.obj):
            spark.append(ExecutorAssignment(cdef.id, tuple(range(cdef.num_tasks))))
            continue
        executors += [ExecutorAssignment(cdef.id, tasks) for tasks in executor_tasks(cdef.num_tasks, min(cdef.parallelism, cdef.num_tasks))]
    faust = conf.acker_runtime == "faust"
    if not faust:
        executors += [ExecutorAssignment(ACKER_COMPONENT, (t,)) for t in range(conf.ackers)]
    n = max(1, min(conf.workers, len(executors)))
    workers: list[list[ExecutorAssignment]] = [[] for _ in range(n)]
    for i, e in enumerate(executors):
        workers[i % n].append(e)
    if faust and conf.ackers:
        workers.append([ExecutorAssignment(ACKER_COMPONENT, tuple(range(conf.ackers)))])  # faust owns its process's main thread
    workers += [[e] for e in spark]
    return workers


class WorkerPlan(BaseModel):
    """What every worker process of a topology reads: ``python -m service.worker PLAN INDEX``.

    Written as ``plan.json`` (schema: ``schemas/worker-plan.schema.json``).

    ``workers[i]`` lists worker ``i``'s executors, each ``[component, [task, ...]]``. The
    config layers are kept apart so that each worker resolves them the same way:
    ``service_conf`` (the service file and env), then the topology's own config, then
    ``topology_overrides`` (``submit -c``, ``rebalance -n``), then each component's.
    Frozen: a plan never changes; a new version of the topology gets a new plan.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    topology_file: str = Field(description="absolute path of the topology's Python file")
    name: str = Field(description="the topology name (its topics' prefix)")
    bootstrap: str = Field(description="bootstrap.servers of the Kafka it runs on")
    workdir: str = Field(description="absolute path where workers write ready files, logs and Spark checkpoints")
    workers: tuple[tuple[ExecutorAssignment, ...], ...] = Field(description="per worker: its executors, each [component, [task, ...]]")
    service_conf: dict[str, Any] = Field(default_factory=dict, description="the service config layer (Storm keys)")
    topology_overrides: dict[str, Any] = Field(default_factory=dict, description="topology config added at submit or rebalance (Storm keys)")
    kafka: dict[str, dict[str, Any]] = Field(default_factory=dict, description='client overrides: {"consumer": {...}, "producer": {...}}')
    executors: dict[str, int] = Field(default_factory=dict, description="rebalance -e: executors per component")
    metrics_port: int = Field(0, ge=0, description="first /metrics port (worker i serves port + i; 0: none)")
    metrics_host: str = Field("127.0.0.1", description="the address /metrics binds to")
    log_level: str = Field("INFO", description="the workers' log level")
    control: bool = Field(False, description="run under squall serve: follow the control topic (activate, deactivate, kill)")
    control_namespace: str = Field("squall", description="the control topics' prefix (SQUALL_CONTROL_NAMESPACE)")
    shutdown_timeout_secs: float = Field(30.0, gt=0, description="how long a SIGTERM drain waits for trees in flight (seconds)")
    python: str = Field(
        "", description="the interpreter workers run: the virtualenv of the topology's dependency bundle (service.deps); empty: the supervisor's own"
    )
    paths: tuple[str, ...] = Field((), description="directories put first on the workers' import path: the bundle's --package")

    def executors_of(self, index: int) -> tuple[ExecutorAssignment, ...]:
        """Worker ``index``'s executors. Raises IndexError for a worker the plan lacks."""
        return self.workers[index]

    def to_json(self) -> str:
        """The plan file's text (indented JSON)."""
        return self.model_dump_json(indent=2)

    @staticmethod
    def read(path: str | Path) -> WorkerPlan:
        """Load a plan file. Raises pydantic's ValidationError on a malformed plan."""
        return WorkerPlan.model_validate_json(Path(path).read_text())


def worker_plan(
    topology_file: str | Path,
    topology: Topology,
    conf: TopologyConfig,
    bootstrap: str,
    workdir: Path,
    workers: Sequence[Sequence[ExecutorAssignment]] | None = None,
    **options: Any,
) -> WorkerPlan:
    """The plan of ``topology``, with the executors of each worker from :func:`plan_workers`; ``options`` are the other :class:`WorkerPlan` fields.

    ``workers``: the executors of each worker, given (a rolling update keeps them: :mod:`service.control.rolling`) instead of dealt.
    Raises ValidationError on a bad option.
    """
    return WorkerPlan(
        topology_file=str(Path(topology_file).resolve()),
        name=topology.name,
        bootstrap=bootstrap,
        workdir=str(Path(workdir).resolve()),
        workers=tuple(tuple(w) for w in (workers if workers is not None else plan_workers(topology, conf))),
        **options,
    )
