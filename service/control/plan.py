"""From a control record to a topology's worker plan on disk (Storm's Nimbus scheduling).

:func:`load_record` writes the record's source to
``<data_dir>/topologies/<name>/v<version>/code<code version>/<file>``, loads it, and applies the record's
overrides: ``submit -c`` config, ``rebalance -n`` workers and ``rebalance -e`` executors.
:func:`materialize` also writes the plan the workers read. Tasks never change: they are
the topology's own (fixed at submit, as in Storm).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from service.control.record import CodeVersion, TopologyRecord
from service.control.rolling import placement_of
from service.control.scheduling import ExecutorAssignment, is_spark_bolt, worker_plan
from service.deps.envs import Env, importable
from streams.config import TopologyConfig, resolve
from streams.model.checks import check_confs
from streams.model.loader import load_topology
from streams.model.spec import Topology


@dataclass(frozen=True)
class TopologyPlan:
    """A record, loaded and planned.

    ``workers[i]``: the executors of worker ``i``, each with its fixed tasks.
    ``tasks``/``executors``: per component. ``path``: the plan file (JSON). ``env``: the
    installed dependency bundle its workers run in (None: the supervisor's own environment).
    """

    name: str
    version: int
    topology: Topology
    conf: TopologyConfig
    workers: list[list[ExecutorAssignment]]
    path: Path
    overrides: dict[str, Any]
    env: Env | None = None
    code: int = 1
    """The code version it runs (:attr:`TopologyRecord.code_version`)."""

    @property
    def tasks(self) -> dict[str, int]:
        """Tasks per component."""
        return {c.id: c.num_tasks for c in self.topology.components.values()}

    @property
    def executors(self) -> dict[str, int]:
        """Executors per component (a SparkBolt has one: its driver)."""
        return {c.id: 1 if is_spark_bolt(c.obj) else c.parallelism for c in self.topology.components.values()}


def record_overrides(rec: TopologyRecord) -> dict[str, Any]:
    """The topology-layer config a record adds: ``submit -c`` keys, then ``rebalance -n``."""
    out = dict(rec.conf)
    if rec.workers is not None:
        out["topology.workers"] = rec.workers
    return out


def load_record(rec: TopologyRecord, data_dir: Path, service_conf: dict[str, Any], env: Env | None = None) -> tuple[Path, Topology, TopologyConfig]:
    """Write the record's source and load it with the record's overrides applied (importing from ``env`` too: its dependency bundle).

    Raises TopologyError/ConfigError naming the file or component (user code may raise anything).
    """
    folder = data_dir / "topologies" / rec.name / f"v{rec.version}" / f"code{rec.code_version}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / Path(rec.file_name).name
    if not path.exists() or path.read_text() != rec.source:
        path.write_text(rec.source)
    with importable(env):
        topology = load_topology(path, rec.name)
    topology.conf.update(record_overrides(rec))
    for comp, n in rec.executors.items():
        if comp in topology.components:
            topology.components[comp].parallelism = n
    conf = resolve(service_conf, topology.conf, where=rec.name)
    check_confs(topology, service_conf)  # e.g. a window longer than the message timeout
    return path, topology, conf


def materialize(
    rec: TopologyRecord,
    data_dir: Path,
    bootstrap: str,
    *,
    service_conf: dict[str, Any],
    kafka: dict[str, Any],
    log_level: str,
    shutdown_timeout_s: float,
    control_namespace: str = "squall",
    metrics_host: str = "127.0.0.1",
    env: Env | None = None,
) -> TopologyPlan:
    """Load ``rec`` and write its worker plan (``plan.json`` beside the source); ``env``: its installed dependency bundle."""
    path, topology, conf = load_record(rec, data_dir, service_conf, env)
    overrides = record_overrides(rec)
    plan = worker_plan(
        path,
        topology,
        conf,
        bootstrap,
        path.parent,
        service_conf=service_conf,
        kafka=kafka,
        log_level=log_level,
        topology_overrides=overrides,
        executors=dict(rec.executors),
        control=True,
        control_namespace=control_namespace,
        shutdown_timeout_secs=shutdown_timeout_s,
        metrics_host=metrics_host,
        python=env.python if env is not None else "",
        paths=env.paths if env is not None else (),
        workers=placement_of(rec.placement) if rec.placement is not None else None,
    )
    plan_path = path.parent / "plan.json"
    plan_path.write_text(plan.to_json())
    return TopologyPlan(rec.name, rec.version, topology, conf, [list(w) for w in plan.workers], plan_path, overrides, env, rec.code_version)


def code_record(rec: TopologyRecord, code: CodeVersion) -> TopologyRecord:
    """``rec`` as it was under the code an update rolls away from (``rec.update.from_code``): that code, its conf and bundle, and the placement it ran with.

    Its plan is the old workers' plan, the same on every supervisor (:mod:`service.control.rolling`).
    """
    placement = rec.update.from_placement if rec.update is not None else rec.placement
    return rec.model_copy(update={**code.record_fields(), "placement": placement, "update": None})
