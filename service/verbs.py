"""Storm's verbs against a running service: submit, list, kill, activate, deactivate, rebalance and status.

Each reads or writes the control topic (:mod:`service.control_log`) and reads the topology's
stats topic; :mod:`service.cli` only parses and prints.

Every user mistake raises a :class:`~streams.exceptions.SquallError` whose message is the
one line the CLI prints: it names the file and line, the component, the config key, the
topology or the broker address.
"""

from __future__ import annotations

import math
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from service.admin import ensure_topology_topics, read_topic
from service.broker import EMBEDDED_EVENT_KEY
from service.claims import ClaimBook
from service.control import TopologyRecord, activate, deactivate, kill, rebalance, rebalanced, set_log_levels
from service.control_log import ControlLog, ControlTopics, ControlWriter, ensure_control_topics, probe
from service.errors_view import read_errors
from service.exceptions import ControlError, UsageError
from service.log_levels import parse_level
from service.plan import load_record
from service.topology_boards import claim_snapshots, holds_lease
from streams.config import KEYS, resolve
from streams.model.loader import load_topology
from streams.model.spec import Topology
from streams.monitoring.board import StatsBoard
from streams.monitoring.bolt_progress import REEXECUTION_CAUSES
from streams.monitoring.errors import ErrorReport, merge_counts
from streams.monitoring.spout_ledger import REPLAY_CAUSES
from streams.monitoring.stats import LogHistogram
from streams.transactional.coordinated_bolt import CoordinatedBolt


@dataclass
class Client:
    """A CLI session: the broker, the service-level config, Kafka client overrides."""

    bootstrap: str
    service_conf: dict[str, Any]
    kafka: dict[str, Any]
    names: ControlTopics

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


def submit(client: Client, path: Path, name: str | None, conf: dict[str, Any], now: float) -> str:
    """Store the topology in the control topic (``storm jar``). Returns the printed line."""
    if not path.is_file():
        raise UsageError(f"[{path}] topology file not found")
    source = path.read_text()
    topology = load_topology(path)  # raises TopologyError naming the file and line
    name = name or topology.name
    resolve(client.service_conf, topology.conf, conf, where=name)  # a wrong type: ConfigError naming the key
    client.connect()
    if name in client.records():
        raise ControlError(f"[{name}] a topology of that name is running; kill it first or give --name")
    rec = TopologyRecord.new(name, source, path.name, conf, now)
    with tempfile.TemporaryDirectory() as tmp:
        _, loaded, resolved = load_record(rec, Path(tmp), client.service_conf)
        ensure_topology_topics(client.bootstrap, loaded, resolved)
        executors = sum(c.parallelism for c in loaded.components.values())
        tasks = sum(c.num_tasks for c in loaded.components.values())
    client.put(rec)
    return f"submitted {name}: {resolved.workers} workers, {executors} executors, {tasks} tasks"


def events(client: Client, name: str) -> list[dict[str, Any]]:
    """Worker exits of topology ``name`` recorded in the events topic, oldest first."""
    return [e for e in read_topic(client.bootstrap, client.names.events) if e.get("topology") == name]


def component_kinds(client: Client, name: str) -> dict[str, str]:
    """``component -> spout or bolt`` of running topology ``name`` (ControlError if it is not running)."""
    client.connect()
    rec = client.record(name)
    with tempfile.TemporaryDirectory() as tmp:
        _, topology, _ = load_record(rec, Path(tmp), client.service_conf)
    return {c.id: "spout" if c.is_spout else "bolt" for c in topology.components.values()}


def spout_ids(client: Client, name: str) -> set[str]:
    """The spouts of running topology ``name`` (ControlError if it is not running)."""
    return {c for c, kind in component_kinds(client, name).items() if kind == "spout"}


def _shape(client: Client, rec: TopologyRecord) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        _, topology, conf = load_record(rec, Path(tmp), client.service_conf)
    comps = topology.components.values()
    return {
        "outputs": output_topics(topology),
        "workers": conf.workers,
        "executors": {c.id: c.parallelism for c in comps},
        "tasks": {c.id: c.num_tasks for c in comps},
        "message_timeout_secs": conf.message_timeout_secs,
    }


def output_topics(topology: Topology) -> list[dict[str, str]]:
    """Where the topology's results go: each ``set_output`` topic and each KafkaBolt's fixed topic, with the component that writes it."""
    out = [{"topic": o.topic_for(topology.name), "component": o.component, "kind": "set_output"} for o in topology.outputs]
    for c in topology.components.values():
        if (topic := c.obj.sink_topic(topology.name)) is not None:
            kind = type(c.obj.inner if isinstance(c.obj, CoordinatedBolt) else c.obj).__name__
            out.append({"topic": topic, "component": c.id, "kind": kind})
    return out


def list_topologies(client: Client, now: float) -> list[dict[str, Any]]:
    """One row per topology: name, status, uptime (s), workers, executors, tasks."""
    client.connect()
    rows = []
    for rec in sorted(client.records().values(), key=lambda r: r.name):
        shape = _shape(client, rec)
        rows.append(
            {
                "name": rec.name,
                "status": rec.status.value,
                "uptime_s": round(now - rec.submitted_at, 1),
                "workers": shape["workers"],
                "executors": sum(shape["executors"].values()),
                "tasks": sum(shape["tasks"].values()),
            }
        )
    return rows


def set_log_level(client: Client, name: str, specs: list[str], resets: list[str], now: float) -> str:
    """``squall set_log_level NAME -l logger=LEVEL[:SECONDS] -r logger``. Raises UsageError (a bad spec), ControlError (an unknown topology)."""
    if not specs and not resets:
        raise UsageError(f"[{name}] set_log_level: give -l LOGGER=LEVEL[:SECONDS] or -r LOGGER")
    levels = dict(parse_level(spec, now) for spec in specs)
    client.connect()
    rec = set_log_levels(client.record(name), levels, resets, now)
    client.put(rec)
    parts = [f"{logger}={v['level']}" + (f" for {v['until'] - now:g} s" if v["until"] else "") for logger, v in levels.items()]
    parts += [f"{logger} reset" for logger in resets]
    return f"{name}: " + ", ".join(parts)


def set_active(client: Client, name: str, active: bool, now: float) -> str:
    """Activate or deactivate topology ``name`` (Storm's verbs). Raises ControlError for an unknown one."""
    client.connect()
    rec = client.record(name)
    client.put(activate(rec, now) if active else deactivate(rec, now))
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


def kill_topology(client: Client, name: str, wait_s: float | None, now: float, sleep: Any = time.sleep) -> str:
    """Deactivate, wait ``wait_s`` (default: the message timeout), stop the workers, remove."""
    client.connect()
    rec = client.record(name)
    shape = _shape(client, rec)  # a kill changes the status, never the shape
    wait = float(shape["message_timeout_secs"]) if wait_s is None else wait_s
    killed = kill(rec, wait, now)
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
    ControlWriter(client.bootstrap, client.names, client.kafka.get("producer")).remove(name)
    return f"killed {name} (waited {wait:g} s)"


def parse_executors(pairs: list[str]) -> dict[str, int]:
    """``-e comp=N`` pairs as ``{component: executors}``. Raises UsageError on another shape."""
    out: dict[str, int] = {}
    for pair in pairs:
        comp, sep, raw = pair.partition("=")
        if not sep or not raw.strip().isdigit():
            raise UsageError(f"-e {pair!r}: expected COMPONENT=EXECUTORS")
        out[comp] = int(raw)
    return out


def rebalance_topology(client: Client, name: str, workers: int | None, executors: dict[str, int], now: float, timeout_s: float = 120.0) -> str:
    """Change workers/executors; wait until the running executors match, then ACTIVE."""
    client.connect()
    rec = client.record(name)
    shape = _shape(client, rec)
    new = rebalance(rec, now, workers, executors, shape["tasks"])
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


def _q(h: LogHistogram, q: float) -> float | None:
    v = h.quantile(q)
    return None if math.isnan(v) else round(v, 6)


def _avg(h: LogHistogram) -> float | None:
    """The mean of ``h`` in seconds (Storm's UI shows means), None when empty."""
    return round(h.total / h.count, 6) if h.count else None


def _batches(spouts: list[dict[str, Any]]) -> dict[str, int] | None:
    """A transactional spout's batches committed and replayed, and its last txid (else None)."""
    if not any("batches_committed" in s["counters"] for s in spouts):
        return None
    return {
        "committed": int(sum(s["counters"].get("batches_committed", 0) for s in spouts)),
        "replayed": int(sum(s["counters"].get("batches_replayed", 0) for s in spouts)),
        "last_txid": int(max(s["counters"].get("last_txid", 0) for s in spouts)),
    }


def status(client: Client, name: str, now: float) -> dict[str, Any]:
    """The Storm UI's topology page as a dict (``squall status --json``)."""
    client.connect()
    rec = client.record(name)
    board = StatsBoard(client.bootstrap, name)
    try:
        # Four independent reads, each mostly waiting on the broker (a topic read to its end
        # waits for its last fetch and 0.4 s of quiet): side by side they take the slowest
        # one's time (about 1 s on Apache Kafka) instead of their sum (2-2.5 s).
        with ThreadPoolExecutor(max_workers=4, thread_name_prefix=f"status-{name}") as pool:
            shape_f = pool.submit(_shape, client, rec)
            board_f = pool.submit(board.read_to_now)
            events_f = pool.submit(read_topic, client.bootstrap, client.names.events)
            errors_f = pool.submit(_errors_or_empty, client.bootstrap, name)
            shape, every_event, reports = shape_f.result(), events_f.result(), errors_f.result()
            board_f.result()
        snaps = list(board.latest.values())
        live = board.live(time.time())
    finally:
        board.close()
    running = executors_running(live)
    comps: dict[str, Any] = {}
    for comp, tasks in shape["tasks"].items():
        mine = [s for s in snaps if s["component"] == comp]
        hists = {h: LogHistogram() for h in ("execute_latency", "process_latency", "complete_latency")}
        for s in mine:
            for hist_name, h in hists.items():
                if hist_name in s["hists"]:
                    h.merge(LogHistogram.from_json(s["hists"][hist_name]))
        hist = hists["execute_latency"]
        kind = mine[0]["kind"] if mine else "bolt"
        total: dict[str, Any] = {
            k: int(board.total(kind, k, comp)) for k in ("emitted", "transferred", "acked", "failed", "executed", "replayed", "dead_lettered")
        }
        if kind == "spout":
            total["replays"] = {cause: int(board.total("spout", f"replayed_{cause}", comp)) for cause in REPLAY_CAUSES}
            total["held_back_s"] = round(board.total("spout", "held_back_seconds", comp), 1)
        else:
            total["reexecuted"] = {cause: int(board.total("bolt", f"reexecuted_{cause}", comp)) for cause in REEXECUTION_CAUSES}
        by_cause: dict[str, dict[str, int]] = {}
        for s in mine:
            merge_counts(by_cause, s.get("errors", {}))
        comps[comp] = {
            **total,
            "errors": {cause: sum(types.values()) for cause, types in sorted(by_cause.items())},
            "executors": running.get(comp, 0),
            "executors_planned": shape["executors"][comp],
            "tasks": tasks,
            "kind": kind,
            "execute_latency_avg_s": _avg(hist),
            "process_latency_avg_s": _avg(hists["process_latency"]),
            "complete_latency_avg_s": _avg(hists["complete_latency"]),
            "lag_partitions": {part: int(v) for s in live if s["component"] == comp for part, v in s.get("lag", {}).items()},
            "last_error": next((asdict(r) for r in reversed(reports) if r.component == comp), None),
            "execute_latency_p50_s": _q(hist, 0.5),
            "execute_latency_p99_s": _q(hist, 0.99),
            "capacity": round(max((s["gauges"].get("capacity", 0.0) for s in live if s["component"] == comp), default=0.0), 3),
            "lag": int(sum(v for s in live if s["component"] == comp for v in s.get("lag", {}).values())),
        }
    complete = LogHistogram()
    for s in snaps:
        if s["kind"] == "spout" and "complete_latency" in s["hists"]:
            complete.merge(LogHistogram.from_json(s["hists"]["complete_latency"]))
    spouts = [s for s in snaps if s["kind"] == "spout"]
    return {
        "name": name,
        "status": rec.status.value,
        "uptime_s": round(now - rec.submitted_at, 1),
        "workers": shape["workers"],
        "message_timeout_secs": shape["message_timeout_secs"],
        "trees_acked": int(board.total("spout", "acked")),
        "trees_failed": int(board.total("spout", "failed")),
        "replays": {cause: int(board.total("spout", f"replayed_{cause}")) for cause in REPLAY_CAUSES},
        "pending": int(sum(s["gauges"].get("pending", 0) for s in live if s["kind"] == "spout")),
        "batches": _batches(spouts),
        "complete_latency_p50_s": _q(complete, 0.5),
        "complete_latency_p99_s": _q(complete, 0.99),
        "components": comps,
        "errors": [
            {k: e.get(k) for k in ("event", "at", "supervisor", "worker", "components", "exit_code", "gave_up", "log_tail", "reason")}
            for e in every_event
            if e.get("topology") == name and e.get("event") in ("crashed", "refused", "fenced")
        ][-5:],
        "lease_pauses": int(sum(s["counters"].get("lease_pauses", 0) for s in snaps)),
        "fenced_tuples": int(sum(s["counters"].get("fenced_tuples", 0) for s in snaps)),
        "fenced_acker_ops": int(sum(s["counters"].get("fenced_acker_ops", 0) for s in snaps)),
        "fenced_commits": int(sum(s["counters"].get("fenced_commits", 0) for s in snaps)),
        "contested_tasks": contested_tasks(name, every_event, live),
        "component_errors": [asdict(r) for r in reports[-5:]],
        "embedded_broker": embedded_broker(every_event, now),
        "outputs": shape["outputs"],
    }


def _errors_or_empty(bootstrap: str, name: str) -> list[ErrorReport]:
    """``name``'s error reports; none for a topology submitted before Squall had an errors topic."""
    try:
        return read_errors(bootstrap, name)
    except UsageError:
        return []


def contested_tasks(name: str, every_event: list[dict[str, Any]], live: list[dict[str, Any]]) -> list[str]:
    """Tasks of ``name`` that two worker processes with live stats claim at once (``component:task``; should be empty: :mod:`service.claim_watch`)."""
    book = ClaimBook()
    for e in every_event:
        book.apply(e)
    contested = book.contested(lambda c: holds_lease(claim_snapshots(live, c)))
    return sorted(f"{comp}:{task}" for (topology, (comp, task)) in contested if topology == name)


def embedded_broker(every_event: list[dict[str, Any]], now: float, fresh_s: float = 120.0) -> dict[str, Any] | None:
    """The latest report of an embedded broker's memory (``squall serve --embedded-broker``), if fresh (``fresh_s`` seconds)."""
    reports = [
        e for e in every_event if e.get("topology") == EMBEDDED_EVENT_KEY and e.get("event") == "embedded_broker" and now - float(e.get("at", 0)) <= fresh_s
    ]
    return {k: reports[-1][k] for k in ("supervisor", "rss_bytes", "at")} if reports else None
