"""A read-only subset of the Storm UI's REST API, with Storm's paths and JSON field names.

Served by every supervisor beside ``/metrics`` (:mod:`service.supervisor.http`), so tooling written for
Storm (dashboards, exporters, scripts that read ``/api/v1/topology/<id>``) can read Squall:

* ``GET /api/v1/cluster/summary``
* ``GET /api/v1/topology/summary``
* ``GET /api/v1/topology/<id>``
* ``GET /api/v1/topology/<id>/component/<component>``
* ``GET /api/v1/topology/<id>/lag``

A topology's id is its name. ``topologyStats`` has Storm's four windows (10 minutes, 3
hours, 1 day, all time: :mod:`service.query.windows`); the spouts, bolts and components are
for all time (a ``window`` parameter is accepted and ignored). Latencies are milliseconds as strings with
three decimals, as Storm gives them. Storm's resource fields (memory, CPU) and its profiling
and log-viewer links have no counterpart and are left out. ``schemas/storm-ui-api.openapi.yaml``
documents every response; an unknown topology or component is a 404 with
``{"error": ..., "errorMessage": ...}``, as Storm's UI answers errors.

The views are pure functions of the status dicts :func:`service.query.status.status` and
:func:`service.query.status.list_topologies` return; :class:`StormApi` routes a path to them.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

from service.exceptions import ControlError, UsageError
from service.query.views import pretty
from service.query.windows import window_row

ALL_TIME = ":all-time"
API_PREFIX = "/api/v1/"
TOPOLOGY_STATUS = {"ACTIVE": "ACTIVE", "INACTIVE": "INACTIVE", "REBALANCING": "REBALANCING", "KILLED": "KILLED"}


class NotFound(Exception):
    """A path, topology or component that does not exist (404)."""


def ms(seconds: float | None) -> str:
    """Seconds as Storm's latency string: milliseconds with three decimals (``"0.000"`` when unknown)."""
    return f"{(seconds or 0.0) * 1000:.3f}"


def topology_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``/api/v1/topology/summary`` from :func:`service.query.status.list_topologies` rows."""
    return {
        "topologies": [
            {
                "id": r["name"],
                "name": r["name"],
                "status": TOPOLOGY_STATUS.get(r["status"], r["status"]),
                "uptime": pretty(r["uptime_s"]),
                "uptimeSeconds": int(r["uptime_s"]),
                "tasksTotal": r["tasks"],
                "workersTotal": r["workers"],
                "executorsTotal": r["executors"],
                "replicationCount": 1,
            }
            for r in rows
        ],
        "schedulerDisplayResource": False,
    }


def cluster_summary(version: str, supervisors: int, slots_total: int, slots_used: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``/api/v1/cluster/summary``: supervisors, worker slots, and the topologies' executors and tasks."""
    return {
        "stormVersion": version,
        "supervisors": supervisors,
        "topologies": len(rows),
        "slotsTotal": slots_total,
        "slotsUsed": slots_used,
        "slotsFree": max(0, slots_total - slots_used),
        "executorsTotal": sum(r["executors"] for r in rows),
        "tasksTotal": sum(r["tasks"] for r in rows),
        "schedulerDisplayResource": False,
    }


def _error_fields(c: dict[str, Any], now: float) -> dict[str, Any]:
    err = c.get("last_error")
    if not err:
        return {"lastError": "", "errorHost": "", "errorPort": None, "errorWorkerLogLink": "", "errorTime": None, "errorLapsedSecs": None}
    return {
        "lastError": f"{err['type']}: {err['message']}",
        "errorHost": err["host"],
        "errorPort": None,
        "errorWorkerLogLink": "",
        "errorTime": int(err["at"]),
        "errorLapsedSecs": max(0, int(now - err["at"])),
    }


def _spout(cid: str, c: dict[str, Any], now: float) -> dict[str, Any]:
    return {
        "spoutId": cid,
        "encodedSpoutId": cid,
        "executors": c["executors"],
        "tasks": c["tasks"],
        "emitted": c["emitted"],
        "transferred": c["transferred"],
        "acked": c["acked"],
        "failed": c["failed"],
        "completeLatency": ms(c["complete_latency_avg_s"]),
        **_error_fields(c, now),
    }


def _bolt(cid: str, c: dict[str, Any], now: float) -> dict[str, Any]:
    return {
        "boltId": cid,
        "encodedBoltId": cid,
        "executors": c["executors"],
        "tasks": c["tasks"],
        "emitted": c["emitted"],
        "transferred": c["transferred"],
        "executed": c["executed"],
        "acked": c["acked"],
        "failed": c["failed"],
        "capacity": f"{c['capacity']:.3f}",
        "executeLatency": ms(c["execute_latency_avg_s"]),
        "processLatency": ms(c["process_latency_avg_s"]),
        **_error_fields(c, now),
    }


def topology_page(st: dict[str, Any], now: float) -> dict[str, Any]:
    """``/api/v1/topology/<id>`` from :func:`service.query.status.status`'s dict."""
    comps = st["components"]
    spouts = {cid: c for cid, c in comps.items() if c["kind"] == "spout"}
    bolts = {cid: c for cid, c in comps.items() if c["kind"] != "spout"}
    return {
        "id": st["name"],
        "encodedId": st["name"],
        "name": st["name"],
        "status": TOPOLOGY_STATUS.get(st["status"], st["status"]),
        "uptime": pretty(st["uptime_s"]),
        "uptimeSeconds": int(st["uptime_s"]),
        "tasksTotal": sum(c["tasks"] for c in comps.values()),
        "workersTotal": st["workers"],
        "executorsTotal": sum(c["executors"] for c in comps.values()),
        "msgTimeout": st["message_timeout_secs"],
        "window": ALL_TIME,
        "windowHint": "All time",
        "schedulerDisplayResource": False,
        "replicationCount": 1,
        "debug": st["debug"],
        "samplingPct": st["sampling_pct"],
        "topologyStats": [
            *_window_stats(st, spouts),
            {
                "windowPretty": "All time",
                "window": ALL_TIME,
                "emitted": sum(c["emitted"] for c in comps.values()),
                "transferred": sum(c["transferred"] for c in comps.values()),
                "completeLatency": ms(_mean([c["complete_latency_avg_s"] for c in spouts.values()])),
                "acked": st["trees_acked"],
                "failed": st["trees_failed"],
            },
        ],
        "spouts": [_spout(cid, c, now) for cid, c in spouts.items()],
        "bolts": [_bolt(cid, c, now) for cid, c in bolts.items()],
        "workers": [],
        "configuration": {**st["configuration"], "topology.name": st["name"]},
    }


def _window_stats(st: dict[str, Any], spouts: dict[str, Any]) -> list[dict[str, Any]]:
    """Storm's 10 minute, 3 hour and 1 day rows of ``topologyStats``, in Storm's order, from the status's windows (none without them)."""
    out = []
    for key, w in st.get("windows", {}).items():
        if w["seconds"] is None:
            continue
        row = window_row(w["components"], list(spouts))
        counts = {k: int(row[k] or 0) for k in ("emitted", "transferred", "acked", "failed")}
        out.append({"windowPretty": w["label"], "window": key, **counts, "completeLatency": ms(row["complete_s"])})
    return out


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def component_page(st: dict[str, Any], component: str, errors: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """``/api/v1/topology/<id>/component/<component>``; ``errors``: its error reports (``schemas/error.schema.json``), oldest first.

    Raises NotFound for a component the topology does not have.
    """
    c = st["components"].get(component)
    if c is None:
        raise NotFound(f"[{st['name']}] has no component {component!r} (it has {sorted(st['components'])})")
    spout = c["kind"] == "spout"
    stats = {
        "windowPretty": "All time",
        "window": ALL_TIME,
        "emitted": c["emitted"],
        "transferred": c["transferred"],
        "acked": c["acked"],
        "failed": c["failed"],
    }
    page: dict[str, Any] = {
        "id": component,
        "encodedId": component,
        "name": st["name"],
        "topologyId": st["name"],
        "encodedTopologyId": st["name"],
        "topologyStatus": TOPOLOGY_STATUS.get(st["status"], st["status"]),
        "componentType": "spout" if spout else "bolt",
        "executors": c["executors"],
        "tasks": c["tasks"],
        "window": ALL_TIME,
        "windowHint": "All time",
        "debug": st["debug"],
        "samplingPct": st["sampling_pct"],
        "schedulerDisplayResource": False,
        "componentErrors": [
            {
                "errorTime": int(e["at"] * 1000),
                "errorHost": e["host"],
                "errorPort": None,
                "errorWorkerLogLink": "",
                "errorLapsedSecs": max(0, int(now - e["at"])),
                "error": f"{e['type']}: {e['message']}" + (f"\n{e['traceback']}" if e["traceback"] else ""),
            }
            for e in reversed(errors)
        ],
        "outputStats": [{"stream": "default", "emitted": c["emitted"], "transferred": c["transferred"]}],
        "executorStats": [],
    }
    if spout:
        page["spoutSummary"] = [{**stats, "completeLatency": ms(c["complete_latency_avg_s"])}]
    else:
        page["boltStats"] = [
            {**stats, "executed": c["executed"], "executeLatency": ms(c["execute_latency_avg_s"]), "processLatency": ms(c["process_latency_avg_s"])}
        ]
        page["inputStats"] = []
    return page


_PARTITION = re.compile(r"^(?P<topic>.+)\[(?P<partition>\d+)\]$")


def lag_page(st: dict[str, Any], committed: dict[str, dict[tuple[str, int], int]]) -> dict[str, Any]:
    """``/api/v1/topology/<id>/lag``: per spout, per topic and partition, the committed offset, the log head and the lag.

    ``committed``: ``spout -> {(topic, partition): committed offset}`` (-1 when none).
    """
    out: dict[str, Any] = {}
    for cid, c in st["components"].items():
        if c["kind"] != "spout":
            continue
        result: dict[str, dict[str, dict[str, int]]] = {}
        for part, lag in sorted(c["lag_partitions"].items()):
            m = _PARTITION.match(part)
            if m is None:
                continue
            topic, partition = m["topic"], int(m["partition"])
            done = committed.get(cid, {}).get((topic, partition), -1)
            result.setdefault(topic, {})[str(partition)] = {
                "consumerCommittedOffset": done,
                "logHeadOffset": (done if done >= 0 else 0) + lag,
                "lag": lag,
            }
        out[cid] = {"spoutId": cid, "spoutType": "KAFKA", "spoutLagResult": result}
    return out


class StormApi:
    """Routes ``/api/v1/...`` paths to the views, from data the callables return.

    Args:
      rows: :func:`service.query.status.list_topologies` rows.
      status: :func:`service.query.status.status` of a topology (raises ControlError if unknown).
      errors: a topology's error reports as dicts, oldest first.
      committed: ``(topology, spout, [(topic, partition)]) -> {(topic, partition): offset}``.
      cluster: ``() -> (supervisors, slots total, slots used)``.
      version: what ``stormVersion`` says.
      clock: wall-clock seconds.
      ttl_s: how long a topology's status is reused (seconds; building one reads the stats topic).
    Thread-safe: the HTTP server calls it from several threads.
    """

    def __init__(
        self,
        rows: Callable[[], list[dict[str, Any]]],
        status: Callable[[str], dict[str, Any]],
        errors: Callable[[str], list[dict[str, Any]]],
        committed: Callable[[str, str, list[tuple[str, int]]], dict[tuple[str, int], int]],
        cluster: Callable[[], tuple[int, int, int]],
        version: str,
        clock: Callable[[], float] = time.time,
        ttl_s: float = 2.0,
    ) -> None:
        self.rows = rows
        self.status = status
        self.errors = errors
        self.committed = committed
        self.cluster = cluster
        self.version = version
        self.clock = clock
        self.ttl_s = ttl_s
        self.cache: dict[str, tuple[float, dict[str, Any]]] = {}
        self.lock = threading.Lock()

    def _status(self, name: str) -> dict[str, Any]:
        now = self.clock()
        with self.lock:
            hit = self.cache.get(name)
        if hit is not None and now - hit[0] < self.ttl_s:
            return hit[1]
        try:
            st = self.status(name)
        except (ControlError, UsageError) as exc:
            raise NotFound(str(exc)) from exc
        with self.lock:
            self.cache[name] = (now, st)
        return st

    def handle(self, path: str) -> tuple[int, dict[str, Any]]:
        """``(HTTP status, JSON body)`` for ``path`` (without the query string)."""
        try:
            return 200, self._route(path)
        except NotFound as exc:
            return 404, {"error": "Not Found", "errorMessage": str(exc)}

    def _route(self, path: str) -> dict[str, Any]:
        parts = [p for p in path.removeprefix(API_PREFIX).split("/") if p]
        now = self.clock()
        if parts == ["cluster", "summary"]:
            rows = self.rows()
            supervisors, total, used = self.cluster()
            return cluster_summary(self.version, supervisors, total, used, rows)
        if parts == ["topology", "summary"]:
            return topology_summary(self.rows())
        if len(parts) >= 2 and parts[0] == "topology":
            name = parts[1]
            if len(parts) == 2:
                return topology_page(self._status(name), now)
            if len(parts) == 3 and parts[2] == "lag":
                st = self._status(name)
                committed = {}
                for cid, c in st["components"].items():
                    if c["kind"] == "spout":
                        tps = [(m["topic"], int(m["partition"])) for part in c["lag_partitions"] if (m := _PARTITION.match(part))]
                        committed[cid] = self.committed(name, cid, tps)
                return lag_page(st, committed)
            if len(parts) == 4 and parts[2] == "component":
                st = self._status(name)
                return component_page(st, parts[3], [e for e in self.errors(name) if e["component"] == parts[3]], now)
        raise NotFound(f"no such path {path!r} (Squall serves a read-only subset of the Storm UI's API: see schemas/storm-ui-api.openapi.yaml)")
