"""``squall update``: new code for a running topology with no downtime, and ``--to-version N`` to roll back (issue 51).

The verb checks the new code against the running one (:func:`service.control.compat.compare`),
keeps every version on the control topic (:class:`~service.control.record.CodeVersion`), writes
the record that starts the roll, and follows it until every worker runs the new code. The roll
itself is the supervisors' (:mod:`service.control.rolling`). Storm has no such verb (STORM-167);
Heron's ``update`` and Kafka Streams' rolling upgrades are the models.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from service.brokers.admin import ensure_topology_topics
from service.control.client import Client, default_who, shipped_bundle
from service.control.compat import UpdateDiff, compare
from service.control.log import ControlLog, ControlWriter, EventLog
from service.control.plan import load_record
from service.control.record import CodeVersion, TopologyRecord, audited, begin_update, update_done
from service.control.rolling import keep_placement, placement_json, placement_of, roll_order, roll_progress, worker_codes
from service.control.scheduling import ExecutorAssignment, plan_workers
from service.deps.envs import Env, importable
from service.deps.store import ArtifactStore
from service.exceptions import ControlError, UsageError
from streams.model.loader import load_topology
from streams.monitoring.board import StatsBoard

UPDATE_TIMEOUT_S = 600.0
"""How long ``squall update`` follows the roll by default (seconds); the roll goes on without it."""


def _new_code(
    client: Client,
    rec: TopologyRecord,
    versions: Mapping[int, CodeVersion],
    path: Path | None,
    conf: dict[str, Any],
    to_version: int | None,
    deps: tuple[Path | None, Path | None, tuple[Path, ...]],
    envs: Path,
) -> tuple[CodeVersion, Env | None, bytes | None]:
    """The code to roll to: a stored version (``--to-version``), or ``path`` with its bundle.

    ``conf`` goes over the running ``-c`` keys; the bundle is built now if one is given, else the running one is kept.
    Returns the version (not yet stored), its env, and the bundle's bytes when one was built here.
    """
    if to_version is not None:
        code = versions.get(to_version)
        if code is None:
            raise ControlError(f"[{rec.name}] no version {to_version} (versions: {sorted(versions) or [rec.code_version]})")
        return code, client.env_of(rec.model_copy(update={"artifact": code.artifact})), None
    assert path is not None
    bundle, env = shipped_bundle(path, *deps, envs, rec.name)
    artifact, data = (bundle.describe(), bundle.data) if bundle is not None else (rec.artifact, None)
    if bundle is None and artifact is not None:
        env = client.env_of(rec)
    nxt = max([rec.code_version, *versions]) + 1
    code = CodeVersion(
        name=rec.name, code=nxt, source=path.read_text(), file_name=path.name, conf={**rec.conf, **conf}, artifact=artifact, at=time.time(), who=default_who()
    )
    return code, env, data


def plan_update(
    client: Client, rec: TopologyRecord, code: CodeVersion, env: Env | None, tmp: Path, drain_all: bool
) -> tuple[UpdateDiff, Any, list[int] | None]:
    """Load the running and the new code; returns what changes, the new placement and the roll's order (None, None: dealt, for ``--drain-all``).

    Raises ControlError with every incompatible change, naming the component, unless ``drain_all``;
    TopologyError or ConfigError when the new code does not load.
    """
    _, old_topology, old_conf = load_record(rec, tmp / "old", client.service_conf, client.env_of(rec))
    candidate = rec.model_copy(update=code.record_fields())
    with importable(env):
        load_topology(_write(tmp / "check" / code.file_name, code.source))  # names the file and line of a syntax error
    _, new_topology, new_conf = load_record(candidate, tmp / "new", client.service_conf, env)
    diff = compare(old_topology, new_topology, old_conf, new_conf)
    if not diff.compatible and not drain_all:
        raise ControlError(
            f"[{rec.name}] update refused: {'; '.join(str(r) for r in diff.refusals)} "
            "(squall update --drain-all stops every worker before the new ones start, keeping state and offsets)"
        )
    ensure_topology_topics(client.bootstrap, new_topology, new_conf)
    if drain_all:
        return diff, None, None
    old = placement_of(rec.placement) if rec.placement is not None else plan_workers(old_topology, old_conf)
    new = keep_placement(rec.name, old, new_topology)
    return diff, placement_json(new), roll_order(old, new, diff.added, diff.removed)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def update_topology(
    client: Client,
    name: str,
    path: Path | None,
    conf: dict[str, Any],
    now: float,
    *,
    to_version: int | None = None,
    drain_all: bool = False,
    requirements: Path | None = None,
    package: Path | None = None,
    wheels: tuple[Path, ...] = (),
    timeout_s: float = UPDATE_TIMEOUT_S,
    who: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> str:
    """Roll topology ``name`` onto new code (``path``) or onto stored version ``to_version``; returns the printed line.

    Steps:

    1. read the record and every stored version; refuse while another update or a rebalance is under way;
    2. build the new code's bundle if one is given (else the running one is kept), load the running
       and the new code, and compare them: an incompatible change is refused, naming the component,
       unless ``drain_all``;
    3. store the old version if it predates versions, the new one, and its bundle;
    4. write the record that starts the roll (audited as ``update``);
    5. follow the events and the stats until every worker runs the new code and is live, then mark
       the update done; if a new worker crashed at start-up, the supervisors roll back: follow that,
       then raise ControlError with the reason.

    Raises UsageError, ControlError, DepsError, TopologyError or ConfigError naming the topology,
    component, file or key; ControlError when the roll has not finished within ``timeout_s`` (it goes on).
    """
    if (path is None) == (to_version is None):
        raise UsageError(f"[{name}] give either a topology FILE or --to-version N")
    if to_version is not None and (requirements is not None or package is not None or wheels or conf):
        raise UsageError(f"[{name}] --to-version runs a stored version as it was: no -c, --requirements, --package or --wheel")
    client.connect()
    # 1. The record and its versions.
    control = ControlLog(client.bootstrap, client.names, client.kafka.get("consumer"))
    try:
        control.catch_up()
        rec = control.records.get(name)
        versions = dict(control.versions.get(name, {}))
    finally:
        control.close()
    if rec is None:
        raise ControlError(f"[{name}] no such topology (see: squall list)")
    if rec.update is not None:
        raise ControlError(f"[{name}] an update to version {rec.update.to_code} is under way (see: squall status)")
    with tempfile.TemporaryDirectory() as tmp:
        # 2. The new code, compared with the running one.
        envs = client.envs_dir or Path(tmp) / "envs"
        code, env, data = _new_code(client, rec, versions, path, conf, to_version, (requirements, package, wheels), envs)
        if code.code == rec.code_version:
            raise ControlError(f"[{name}] version {code.code} is the one running")
        diff, placement, order = plan_update(client, rec, code, env, Path(tmp), drain_all)
    # 3. The versions, and the bundle.
    writer = ControlWriter(client.bootstrap, client.names, client.kafka.get("producer"))
    if rec.code_version not in versions:
        writer.put_version(CodeVersion.of(rec))
    summary = diff.summary() + ("" if diff.compatible else f"; incompatible: {diff.reason().replace(chr(10), '; ')}")
    if data is not None and code.artifact is not None:
        ArtifactStore(client.bootstrap, client.names.namespace, client.kafka.get("producer")).put(str(code.artifact["sha256"]), data)
    if code.code not in versions:
        code = code.model_copy(update={"summary": summary})
        writer.put_version(code)
    # 4. The record that starts the roll.
    actor = who or default_who()
    detail = f"version {rec.code_version} -> {code.code}: {summary}"
    started = audited(begin_update(rec, code, placement, drain_all, summary, now, order), "update", actor, now, detail)
    writer.put(started)
    # 5. Follow it.
    return _follow(client, name, rec.code_version, code.code, timeout_s, progress)


def _follow(client: Client, name: str, from_code: int, to_code: int, timeout_s: float, progress: Callable[[str], None] | None) -> str:
    """Wait until every worker runs ``to_code`` (or, after a failure, the rollback to ``from_code`` is done); mark the update done."""
    control = ControlLog(client.bootstrap, client.names, client.kafka.get("consumer"))
    events = EventLog(client.bootstrap, client.names, client.kafka.get("consumer"))
    board = StatsBoard(client.bootstrap, name)
    seen: list[dict[str, Any]] = []
    sizes: dict[int, int] = {}
    said = ""
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            control.poll(0.2)
            seen += [e for e in events.poll(0.2) if e.get("topology") == name]
            board.poll(0.2)
            rec = control.records.get(name)
            if rec is None:
                raise ControlError(f"[{name}] the topology was removed during the update")
            roll = rec.update
            if roll is None:
                return f"updated {name} to version {rec.code_version}" if rec.code_version == to_code else f"[{name}] {rec.last_update}"
            target = roll.to_code
            if rec.version not in sizes:
                sizes[rec.version] = len(rec.placement) if rec.placement is not None else _dealt_workers(client, rec)
            workers = sizes[rec.version]
            codes = worker_codes(seen)
            live = {(s["worker"], s.get("pid")) for s in board.live(time.time(), fresh_s=3.0)}
            line = roll_progress(workers, {w: c for w, (c, _pid) in codes.items()}, target)
            if progress is not None and line != said:
                progress(line)
                said = line
            done = all(codes.get(w, (0, 0))[0] == target and (f"w{w}", codes[w][1]) in live for w in range(workers))
            if done and all(c == target for c, _pid in codes.values()):
                ControlWriter(client.bootstrap, client.names, client.kafka.get("producer")).put(update_done(rec, target, time.time()))
                if roll.rollback_of == to_code:
                    raise ControlError(f"[{name}] update to version {to_code} failed, rolled back to version {target}: {roll.reason}")
                return f"updated {name} from version {from_code} to {target}: {roll.summary}"
            if time.monotonic() > deadline:
                raise ControlError(f"[{name}] update to version {target} not finished after {timeout_s:g} s ({line}); it goes on: see squall status")
            time.sleep(0.3)
    finally:
        board.close()
        events.close()
        control.close()


def _dealt_workers(client: Client, rec: TopologyRecord) -> int:
    """How many workers ``rec`` deals its executors onto (a record without a placement)."""
    with tempfile.TemporaryDirectory() as tmp:
        _, topology, conf = load_record(rec, Path(tmp), client.service_conf, client.env_of(rec))
    workers: list[list[ExecutorAssignment]] = plan_workers(topology, conf)
    return len(workers)
