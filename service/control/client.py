"""The writing verbs against a running service: submit, kill, activate, deactivate, rebalance and set_log_level.

Each writes the topology's control record (:mod:`service.control.log`); ``kill`` and
``rebalance`` then wait for the workers to follow (the events topic, the stats topic).
:mod:`service.cli.main` only parses and prints; the reading verbs (list, status) are
:mod:`service.query.status`.

Every user mistake raises a :class:`~streams.exceptions.SquallError` whose message is the
one line the CLI prints: it names the file and line, the component, the config key, the
topology or the broker address.
"""

from __future__ import annotations

import getpass
import os
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from service.brokers.admin import ensure_topology_topics, read_topic
from service.control.log import ControlLog, ControlTopics, ControlWriter, ensure_control_topics, probe
from service.control.log_levels import parse_level
from service.control.plan import load_record
from service.control.record import (
    CodeVersion,
    TopologyRecord,
    activate,
    audited,
    deactivate,
    kill,
    rebalance,
    rebalanced,
    set_debug,
    set_log_levels,
    trace_rate,
)
from service.deps.bundle import Bundle, build_bundle
from service.deps.envs import Env, importable, prepare, ready
from service.deps.store import ArtifactStore
from service.exceptions import ControlError, UsageError
from streams.config import KEYS, resolve, sources
from streams.model.loader import load_topology
from streams.model.spec import Topology
from streams.monitoring.board import StatsBoard
from streams.transactional.coordinated_bolt import CoordinatedBolt


@dataclass
class Client:
    """A CLI session: the broker, the service-level config, Kafka client overrides."""

    bootstrap: str
    service_conf: dict[str, Any]
    kafka: dict[str, Any]
    names: ControlTopics
    envs_dir: Path | None = None
    """Where topologies' dependency bundles are installed for loading them here (None: a directory under the system's temp dir)."""

    def env_of(self, rec: TopologyRecord) -> Env | None:
        """The installed env of ``rec``'s dependency bundle (installed here first if need be), or None when it ships none.

        Verbs that read a topology's shape load its file, which may import what only its bundle
        has. Raises DepsError or BrokerError.
        """
        if rec.artifact is None:
            return None
        sha = str(rec.artifact["sha256"])
        envs = self.envs_dir or Path(tempfile.gettempdir()) / "squall-envs"
        return ready(envs, sha) or prepare(ArtifactStore(self.bootstrap, self.names.namespace, self.kafka.get("consumer")).get(sha), sha, envs, rec.name)

    def connect(self) -> None:
        """Raise BrokerError (one line) if no broker answers; create the control topics."""
        probe(self.bootstrap)
        ensure_control_topics(self.bootstrap, self.names)

    def records(self) -> dict[str, TopologyRecord]:
        """Every topology record, read to the end of the control topic."""
        log = ControlLog(self.bootstrap, self.names, self.kafka.get("consumer"))
        try:
            return dict(log.catch_up())
        finally:
            log.close()

    def record(self, name: str) -> TopologyRecord:
        """Raises ControlError naming ``name`` if there is no such topology."""
        rec = self.records().get(name)
        if rec is None:
            raise ControlError(f"[{name}] no such topology (see: squall list)")
        return rec

    def put(self, rec: TopologyRecord) -> None:
        """Write ``rec`` to the control topic. Raises BrokerError."""
        ControlWriter(self.bootstrap, self.names, self.kafka.get("producer")).put(rec)


def parse_conf(pairs: list[str]) -> dict[str, Any]:
    """``-c key=value`` pairs; values are YAML scalars (``4`` is an int).

    Raises UsageError naming an unknown key or a pair without ``=``.
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"-c {pair!r}: expected key=value")
        if key not in KEYS and not key.startswith("spark."):
            raise UsageError(f"-c {key}: unknown config key (known: topology.*, squall.* keys of docs, or spark.*)")
        out[key] = yaml.safe_load(raw) if raw else raw
    return out


def shipped_bundle(
    path: Path, requirements: Path | None, package: Path | None, wheels: tuple[Path, ...], envs: Path, topology: str
) -> tuple[Bundle | None, Env | None]:
    """Check a topology file and pack and install the dependencies given with it (``submit`` and ``update``); ``(None, None)`` without any.

    Steps: 1. the file exists and lies inside ``--package``; 2. resolve and pack (a conflict with
    Squall's own packages is refused now); 3. install the bundle into ``envs`` as every supervisor
    will, offline, so the caller can load the topology through it. Raises UsageError or DepsError
    naming the file.
    """
    # 1. The file.
    if not path.is_file():
        raise UsageError(f"[{path}] topology file not found")
    if package is not None and package.resolve() not in path.resolve().parents:
        raise UsageError(f"[{path}] --package {package}: the topology file must be inside the package")
    if requirements is None and package is None and not wheels:
        return None, None
    # 2. Resolve and pack.
    bundle = build_bundle(requirements, package, wheels)
    # 3. Install it as a supervisor would.
    return bundle, prepare(bundle.data, bundle.sha256, envs, topology)


def submit(
    client: Client,
    path: Path,
    name: str | None,
    conf: dict[str, Any],
    now: float,
    requirements: Path | None = None,
    package: Path | None = None,
    wheels: tuple[Path, ...] = (),
) -> str:
    """Store the topology in the control topic (``storm jar``), with its dependencies if any are given. Returns the printed line.

    Steps, with ``requirements``, ``package`` or ``wheels`` (:mod:`service.deps`):

    1. resolve and pack them here, once (a conflict with Squall's own packages is refused now);
    2. install the bundle into a throw-away virtualenv, offline, as every supervisor will, and load
       the topology with it (a bundle that does not install or import fails here, not on the cluster);
    3. put the bundle on ``<namespace>.__artifacts`` and name it in the record.

    Raises UsageError, DepsError, TopologyError or ConfigError naming the file, key or topology.
    """
    with tempfile.TemporaryDirectory() as tmp:
        # 1-2. Resolve, pack and install (kept in the envs dir: the verbs run here load through it).
        bundle, env = shipped_bundle(path, requirements, package, wheels, client.envs_dir or Path(tmp) / "envs", name or path.stem)
        source = path.read_text()
        with importable(env):
            topology = load_topology(path)  # raises TopologyError naming the file and line
        name = name or topology.name
        resolve(client.service_conf, topology.conf, conf, where=name)  # a wrong type: ConfigError naming the key
        client.connect()
        if name in client.records():
            raise ControlError(f"[{name}] a topology of that name is running; kill it first or give --name")
        rec = TopologyRecord.new(name, source, path.name, conf, now)
        if bundle is not None:
            rec = rec.model_copy(update={"artifact": bundle.describe()})
        _, loaded, resolved = load_record(rec, Path(tmp), client.service_conf, env)
        ensure_topology_topics(client.bootstrap, loaded, resolved)
        executors = sum(c.parallelism for c in loaded.components.values())
        tasks = sum(c.num_tasks for c in loaded.components.values())
        # 3. The bundle, then the record that names it.
        if bundle is not None:
            ArtifactStore(client.bootstrap, client.names.namespace, client.kafka.get("producer")).put(bundle.sha256, bundle.data)
    client.put(rec)
    ControlWriter(client.bootstrap, client.names, client.kafka.get("producer")).put_version(CodeVersion.of(rec, default_who()))
    shipped = f", dependencies {bundle.sha256[:12]} ({len(bundle.data):,} bytes, {len(bundle.manifest['wheels'])} wheels)" if bundle is not None else ""
    return f"submitted {name}: {resolved.workers} workers, {executors} executors, {tasks} tasks{shipped}"


def events(client: Client, name: str) -> list[dict[str, Any]]:
    """Worker exits of topology ``name`` recorded in the events topic, oldest first."""
    return [e for e in read_topic(client.bootstrap, client.names.events) if e.get("topology") == name]


def component_kinds(client: Client, name: str) -> dict[str, str]:
    """``component -> spout or bolt`` of running topology ``name`` (ControlError if it is not running)."""
    client.connect()
    rec = client.record(name)
    with tempfile.TemporaryDirectory() as tmp:
        _, topology, _ = load_record(rec, Path(tmp), client.service_conf, client.env_of(rec))
    return {c.id: "spout" if c.is_spout else "bolt" for c in topology.components.values()}


def spout_ids(client: Client, name: str) -> set[str]:
    """The spouts of running topology ``name`` (ControlError if it is not running)."""
    return {c for c, kind in component_kinds(client, name).items() if kind == "spout"}


def topology_shape(client: Client, rec: TopologyRecord) -> dict[str, Any]:
    """Topology ``rec``'s outputs, workers, executors and tasks per component, message timeout (s) and configuration, from its stored source.

    ``configuration``: every key of the resolved config (Storm's names) with its value;
    ``configuration_sources``: where each came from (``default``, ``service`` or ``topology``,
    :func:`streams.config.sources`); ``component_configuration``: per component, the keys it
    sets itself (``get_component_configuration`` and the builder's ``add_configuration``),
    which win over the topology's for it. ``debug`` and ``sampling_pct``: sampled tracing
    (``topology.debug``, ``squall.trace.sample.rate`` as a percentage; 0 without debug), or
    what ``squall debug`` set since (:attr:`TopologyRecord.debug`). ``spouts``: the spout ids;
    ``inputs``: per component, what it subscribes to (``component``, ``stream``, ``grouping``,
    ``fields``): the edges of the topology's graph.
    """
    with tempfile.TemporaryDirectory() as tmp:
        _, topology, conf = load_record(rec, Path(tmp), client.service_conf, client.env_of(rec))
    comps = topology.components.values()
    rate = trace_rate(rec)
    return {
        "outputs": output_topics(topology),
        "workers": conf.workers,
        "executors": {c.id: c.parallelism for c in comps},
        "tasks": {c.id: c.num_tasks for c in comps},
        "message_timeout_secs": conf.message_timeout_secs,
        "debug": conf.debug if rate is None else rate > 0,
        "sampling_pct": round(((conf.trace_sample_rate if conf.debug else 0.0) if rate is None else rate) * 100, 6),
        "configuration": conf.as_dict(),
        "configuration_sources": sources(("service", client.service_conf), ("topology", topology.conf)),
        "component_configuration": {c.id: dict(c.conf) for c in comps if c.conf},
        "spouts": [c.id for c in comps if c.is_spout],
        "inputs": {c.id: [{"component": i.component, "stream": i.stream, "grouping": i.kind.value, "fields": list(i.fields)} for i in c.inputs] for c in comps},
    }


def output_topics(topology: Topology) -> list[dict[str, str]]:
    """Where the topology's results go: each ``set_output`` topic and each KafkaBolt's fixed topic, with the component that writes it."""
    out = [{"topic": o.topic_for(topology.name), "component": o.component, "kind": "set_output"} for o in topology.outputs]
    for c in topology.components.values():
        if (topic := c.obj.sink_topic(topology.name)) is not None:
            kind = type(c.obj.inner if isinstance(c.obj, CoordinatedBolt) else c.obj).__name__
            out.append({"topic": topic, "component": c.id, "kind": kind})
    return out


def default_who() -> str:
    """Who a verb acts as in a record's actions: ``user@host``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


def set_log_level(client: Client, name: str, specs: list[str], resets: list[str], now: float, who: str | None = None) -> str:
    """``squall set_log_level NAME -l logger=LEVEL[:SECONDS] -r logger``. Raises UsageError (a bad spec), ControlError (an unknown topology)."""
    if not specs and not resets:
        raise UsageError(f"[{name}] set_log_level: give -l LOGGER=LEVEL[:SECONDS] or -r LOGGER")
    levels = dict(parse_level(spec, now) for spec in specs)
    client.connect()
    parts = [f"{logger}={v['level']}" + (f" for {v['until'] - now:g} s" if v["until"] else "") for logger, v in levels.items()]
    parts += [f"{logger} reset" for logger in resets]
    rec = set_log_levels(client.record(name), levels, resets, now)
    client.put(audited(rec, "set_log_level", who or default_who(), now, ", ".join(parts)))
    return f"{name}: " + ", ".join(parts)


def set_debug_tracing(client: Client, name: str, on: bool, sampling_pct: float, now: float, who: str | None = None) -> str:
    """``squall debug NAME on|off --sampling-pct P``: sampled tracing on or off, live (Storm UI's debug action).

    Raises ControlError for an unknown or killed topology or a percentage outside 0..100.
    """
    client.connect()
    detail = f"on at {sampling_pct:g}%" if on else "off"
    client.put(audited(set_debug(client.record(name), on, sampling_pct, now), "debug", who or default_who(), now, detail))
    return f"{name}: debug {detail}"


def set_active(client: Client, name: str, active: bool, now: float, who: str | None = None) -> str:
    """Activate or deactivate topology ``name`` (Storm's verbs). Raises ControlError for an unknown one."""
    client.connect()
    rec = client.record(name)
    changed = activate(rec, now) if active else deactivate(rec, now)
    client.put(audited(changed, "activate" if active else "deactivate", who or default_who(), now))
    return f"{'activated' if active else 'deactivated'} {name}"


def still_running(workers: set[int], seen: list[dict[str, Any]], since: float) -> dict[int, dict[str, Any]]:
    """The workers of ``workers`` that may still run after a kill at ``since``: worker -> its last ``started`` event.

    A worker is done once it reported ``stopped`` after the kill, or when its last event is
    not ``started``: it crashed, was fenced or refused, or was stopped before the kill and
    not started again, or never started (a supervisor starts no worker of a killed topology).

    >>> seen = [{"worker": 0, "event": "started", "at": 1.0, "pid": 7}, {"worker": 1, "event": "crashed", "at": 2.0}]
    >>> still_running({0, 1, 2}, seen, since=5.0)
    {0: {'worker': 0, 'event': 'started', 'at': 1.0, 'pid': 7}}
    >>> still_running({0, 1, 2}, [*seen, {"worker": 0, "event": "stopped", "at": 6.0}], since=5.0)
    {}
    """
    last: dict[int, dict[str, Any]] = {}
    stopped: set[int] = set()
    for e in seen:
        w = int(e["worker"])
        last[w] = e
        if e.get("event") == "stopped" and float(e["at"]) >= since:
            stopped.add(w)
    return {w: last[w] for w in sorted(workers - stopped) if w in last and last[w].get("event") == "started"}


def kill_topology(client: Client, name: str, wait_s: float | None, now: float, sleep: Any = time.sleep, who: str | None = None) -> str:
    """Deactivate, wait ``wait_s`` (default: the message timeout), stop the workers, remove."""
    client.connect()
    rec = client.record(name)
    shape = topology_shape(client, rec)  # a kill changes the status, never the shape
    wait = float(shape["message_timeout_secs"]) if wait_s is None else wait_s
    killed = audited(kill(rec, wait, now), "kill", who or default_who(), now, f"wait {wait:g} s")
    client.put(killed)
    sleep(wait)
    # The supervisors stop the workers at kill_at (each drains); wait until every worker's
    # exit is recorded, so the topology is gone when this returns.
    workers = set(range(int(shape["workers"])))
    deadline = time.monotonic() + 90
    while True:
        left = still_running(workers, events(client, name), now)
        if not left:
            break
        if time.monotonic() >= deadline:
            where = ", ".join(f"w{w} (pid {e.get('pid')} on {e.get('supervisor')})" for w, e in sorted(left.items()))
            raise ControlError(f"[{name}] workers {where} did not report stopping within 90 s after kill_at; the topology is left KILLED")
        time.sleep(0.5)
    writer = ControlWriter(client.bootstrap, client.names, client.kafka.get("producer"))
    writer.remove(name)
    for code in stored_versions(client, name):
        writer.remove_version(name, code)
    return f"killed {name} (waited {wait:g} s)"


def stored_versions(client: Client, name: str) -> list[int]:
    """The code versions of topology ``name`` kept on the control topic (``squall update``), oldest first."""
    log = ControlLog(client.bootstrap, client.names, client.kafka.get("consumer"))
    try:
        log.catch_up()
        return sorted(log.versions.get(name, {}))
    finally:
        log.close()


def parse_executors(pairs: list[str]) -> dict[str, int]:
    """``-e comp=N`` pairs as ``{component: executors}``. Raises UsageError on another shape."""
    out: dict[str, int] = {}
    for pair in pairs:
        comp, sep, raw = pair.partition("=")
        if not sep or not raw.strip().isdigit():
            raise UsageError(f"-e {pair!r}: expected COMPONENT=EXECUTORS")
        out[comp] = int(raw)
    return out


def rebalance_topology(
    client: Client, name: str, workers: int | None, executors: dict[str, int], now: float, timeout_s: float = 120.0, who: str | None = None
) -> str:
    """Change workers/executors; wait until the running executors match, then ACTIVE."""
    client.connect()
    rec = client.record(name)
    shape = topology_shape(client, rec)
    new = rebalance(rec, now, workers, executors, shape["tasks"])
    detail = ", ".join([*([f"workers {workers}"] if workers is not None else []), *(f"{c}={n}" for c, n in sorted(executors.items()))])
    new = audited(new, "rebalance", who or default_who(), now, detail)
    client.put(new)
    want = {**shape["executors"], **new.executors}
    board = StatsBoard(client.bootstrap, name)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            board.catch_up(quiet_s=0.4, timeout_s=2)
            have = executors_running(board.live(time.time(), fresh_s=3.0))
            if all(have.get(c, 0) == n for c, n in want.items()):
                break
            if time.monotonic() > deadline:
                raise ControlError(f"[{name}] rebalance not settled after {timeout_s:g} s: executors {have}, want {want}")
    finally:
        board.close()
    client.put(rebalanced(client.record(name), time.time()))
    return f"rebalanced {name}: " + ", ".join(f"{c}={n}" for c, n in sorted(want.items()))


def executors_running(live: list[dict[str, Any]]) -> dict[str, int]:
    """``component -> executors`` that are running (one live snapshot each)."""
    out: dict[str, int] = {}
    for s in live:
        if s["kind"] in ("spout", "bolt", "spark"):
            out[s["component"]] = out.get(s["component"], 0) + 1
    return out
