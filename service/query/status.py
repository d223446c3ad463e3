"""The reading verbs against a running service: ``squall list`` and ``squall status`` (Storm's ``list`` and the UI's topology summary).

Both read the control record (through :class:`service.control.client.Client`), the stats
topic, the events topic and the error reports; nothing here writes.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from service.brokers.admin import read_topic
from service.brokers.embedded import EMBEDDED_EVENT_KEY
from service.control.boards import claim_snapshots, holds_lease
from service.control.claims import ClaimBook
from service.control.client import Client, executors_running, topology_shape
from service.control.record import TopologyRecord
from service.control.rolling import roll_progress, worker_codes
from service.exceptions import UsageError
from service.query.errors import read_errors
from service.query.reachability import silent_workers, unreachable_supervisors
from streams.monitoring.board import StatsBoard
from streams.monitoring.bolt_progress import REEXECUTION_CAUSES
from streams.monitoring.errors import ErrorReport, merge_counts
from streams.monitoring.spout_ledger import REPLAY_CAUSES
from streams.monitoring.stats import LogHistogram


def list_topologies(client: Client, now: float) -> list[dict[str, Any]]:
    """One row per topology (:func:`topology_row`), by name."""
    client.connect()
    return [topology_row(rec, topology_shape(client, rec), now) for rec in sorted(client.records().values(), key=lambda r: r.name)]


def topology_row(rec: TopologyRecord, shape: dict[str, Any], now: float) -> dict[str, Any]:
    """``squall list``'s row of ``rec``: name, status, uptime (s), workers, executors, tasks (``shape``: :func:`topology_shape`)."""
    return {
        "name": rec.name,
        "status": rec.status.value,
        "uptime_s": round(now - rec.submitted_at, 1),
        "workers": shape["workers"],
        "executors": sum(shape["executors"].values()),
        "tasks": sum(shape["tasks"].values()),
        "version": rec.code_version,
        "updating_to": rec.update.to_code if rec.update is not None else None,
    }


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
            shape_f = pool.submit(topology_shape, client, rec)
            board_f = pool.submit(board.read_to_now)
            events_f = pool.submit(read_topic, client.bootstrap, client.names.events)
            errors_f = pool.submit(_errors_or_empty, client.bootstrap, name)
            shape, every_event, reports = shape_f.result(), events_f.result(), errors_f.result()
            board_f.result()
        return build_status(rec, shape, board, every_event, reports, now)
    finally:
        board.close()


def executor_row(snap: dict[str, Any]) -> dict[str, Any]:
    """One running executor's row for the UI's component page, from its stats snapshot (``schemas/stats.schema.json``).

    Cumulative counts, capacity, mean latencies (seconds), its tasks and its input lag per partition.
    """
    c, hists = snap["counters"], snap.get("hists", {})

    def mean(name: str) -> float | None:
        raw = hists.get(name)
        return _avg(LogHistogram.from_json(raw)) if raw else None

    return {
        "instance": snap.get("instance", ""),
        "worker": snap["worker"],
        "pid": snap.get("pid"),
        "tasks": list(snap.get("tasks", [])),
        **{k: int(c.get(k, 0)) for k in ("emitted", "transferred", "executed", "acked", "failed")},
        "capacity": round(float(snap["gauges"].get("capacity", 0.0)), 3),
        "execute_latency_avg_s": mean("execute_latency"),
        "process_latency_avg_s": mean("process_latency"),
        "complete_latency_avg_s": mean("complete_latency"),
        "lag": {part: int(v) for part, v in snap.get("lag", {}).items()},
    }


def window_totals(st: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The cumulative totals a status dict holds, per component, as :class:`service.query.windows.StatWindows` samples them.

    Counts (emitted, transferred, acked, failed, executed) and each latency's ``*_sum_s`` and ``*_count``.
    """
    out: dict[str, dict[str, float]] = {}
    for comp, c in st["components"].items():
        row = {k: float(c[k]) for k in ("emitted", "transferred", "acked", "failed", "executed")}
        for name, (total, count) in c["latency_sums"].items():
            row[f"{name}_sum_s"], row[f"{name}_count"] = float(total), float(count)
        out[comp] = row
    return out


def build_status(
    rec: TopologyRecord, shape: dict[str, Any], board: StatsBoard, every_event: list[dict[str, Any]], reports: list[ErrorReport], now: float
) -> dict[str, Any]:
    """:func:`status` from what it read: the record, its :func:`topology_shape`, a board read to now, every event and ``rec``'s error reports (oldest first).

    Reads nothing itself (:class:`service.query.live.LiveStatus` keeps the same inputs current between requests).
    """
    name = rec.name
    snaps = list(board.latest.values())
    live = board.live(time.time())
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
            "latency_sums": {k.removesuffix("_latency"): [round(h.total, 6), h.count] for k, h in hists.items()},
            "execute_latency_p50_s": _q(hist, 0.5),
            "execute_latency_p99_s": _q(hist, 0.99),
            "capacity": round(max((s["gauges"].get("capacity", 0.0) for s in live if s["component"] == comp), default=0.0), 3),
            "lag": int(sum(v for s in live if s["component"] == comp for v in s.get("lag", {}).values())),
            "executor_stats": [executor_row(s) for s in sorted((s for s in live if s["component"] == comp), key=lambda s: (s["tasks"] or [0])[0])],
        }
    complete = LogHistogram()
    for s in snaps:
        if s["kind"] == "spout" and "complete_latency" in s["hists"]:
            complete.merge(LogHistogram.from_json(s["hists"]["complete_latency"]))
    spouts = [s for s in snaps if s["kind"] == "spout"]
    mine = [e for e in every_event if e.get("topology") == name]
    book = ClaimBook.of(mine)
    silent = silent_workers(name, book, snaps, now)
    return {
        "name": name,
        "status": rec.status.value,
        "version": rec.code_version,
        "update": _update(rec, mine, shape["workers"]),
        "last_update": rec.last_update,
        "worker_versions": {f"w{w}": code for w, (code, _pid) in worker_codes(mine).items()},
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
            if e.get("topology") == name and e.get("event") in ("crashed", "refused", "fenced", "failed_install")
        ][-5:],
        "lease_pauses": int(sum(s["counters"].get("lease_pauses", 0) for s in snaps)),
        "lease_paused_s": round(sum(s["counters"].get("lease_paused_seconds", 0.0) for s in snaps), 1),
        "lease_paused_workers": sorted({s["worker"] for s in snaps if s["counters"].get("lease_pauses", 0)}),
        "silent_workers": silent,
        "unreachable": unreachable_supervisors(name, silent, book),
        "fenced_tuples": int(sum(s["counters"].get("fenced_tuples", 0) for s in snaps)),
        "fenced_acker_ops": int(sum(s["counters"].get("fenced_acker_ops", 0) for s in snaps)),
        "fenced_commits": int(sum(s["counters"].get("fenced_commits", 0) for s in snaps)),
        "contested_tasks": contested_tasks(name, every_event, live),
        "component_errors": [asdict(r) for r in reports[-5:]],
        "embedded_broker": embedded_broker(every_event, now),
        "outputs": shape["outputs"],
        "debug": shape["debug"],
        "sampling_pct": shape["sampling_pct"],
        "configuration": shape["configuration"],
        "configuration_sources": shape["configuration_sources"],
        "component_configuration": shape["component_configuration"],
    }


def _update(rec: TopologyRecord, events: list[dict[str, Any]], workers: int) -> dict[str, Any] | None:
    """The update under way (``squall update``): from and to, when, what it changes, and which workers run which version; None without one."""
    roll = rec.update
    if roll is None:
        return None
    codes = {w: code for w, (code, _pid) in worker_codes(events).items()}
    return {
        "from": roll.from_code,
        "to": roll.to_code,
        "started_at": roll.started_at,
        "drain_all": roll.drain_all,
        "summary": roll.summary,
        "rollback_of": roll.rollback_of,
        "reason": roll.reason,
        "progress": roll_progress(len(rec.placement) if rec.placement is not None else workers, codes, roll.to_code),
    }


def _errors_or_empty(bootstrap: str, name: str) -> list[ErrorReport]:
    """``name``'s error reports; none for a topology submitted before Squall had an errors topic."""
    try:
        return read_errors(bootstrap, name)
    except UsageError:
        return []


def contested_tasks(name: str, every_event: list[dict[str, Any]], live: list[dict[str, Any]]) -> list[str]:
    """Tasks of ``name`` that two worker processes with live stats claim at once (``component:task``; should be empty: :mod:`service.worker.claim_watch`)."""
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
