"""What the reading verbs print (``squall list``, ``status``, ``errors``, ``dlq list``), as text from the data they read.

Pure functions: the CLI prints them after reading the topics itself, and a supervisor serves them
from its tails kept open (``/squall/v1/...``, :mod:`service.supervisor.verbs_api`), so that a
verb answered by the local supervisor prints exactly what it would have printed alone.
"""

from __future__ import annotations

import json
from typing import Any

from service.query.dlq import DeadLetter, choose
from service.query.errors import error_lines, errors_json
from streams.monitoring.errors import ErrorReport


def pretty(seconds: float) -> str:
    """Storm's uptime format: ``"6m 5s"``, ``"2h 0m 3s"``, ``"1d 0h 0m 0s"``.

    >>> pretty(365), pretty(7203), pretty(86400)
    ('6m 5s', '2h 0m 3s', '1d 0h 0m 0s')
    """
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}d {h}h {m}m {s}s"
    if h:
        return f"{h}h {m}m {s}s"
    return f"{m}m {s}s"


def ms(seconds: float | None) -> str:
    """Seconds as milliseconds for the status table ("-" when unknown)."""
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def list_lines(rows: list[dict[str, Any]], as_json: bool = False) -> list[str]:
    """``squall list``: one row per topology (``--json``: the rows as JSON)."""
    if as_json:
        return [json.dumps(rows, indent=2)]
    out = [f"{'NAME':<24} {'STATUS':<12} {'UPTIME':>9} {'WORKERS':>7} {'EXECUTORS':>9} {'TASKS':>6} {'VERSION':>8}"]
    for r in rows:
        version = f"{r.get('version', 1)}" + (f"->{r['updating_to']}" if r.get("updating_to") else "")
        out.append(f"{r['name']:<24} {r['status']:<12} {r['uptime_s']:>8.0f}s {r['workers']:>7} {r['executors']:>9} {r['tasks']:>6} {version:>8}")
    return out


def status_lines(st: dict[str, Any], as_json: bool = False) -> list[str]:
    """``squall status``: the Storm UI's topology page as text (``--json``: the status dict, without the UI's windows and actions)."""
    if as_json:
        return [json.dumps({k: v for k, v in st.items() if k not in ("windows", "actions")}, indent=2)]
    out: list[str] = []
    out.append(f"{st['name']}  {st['status']}  up {st['uptime_s']:.0f}s  workers {st['workers']}  pending {st['pending']}  version {st.get('version', 1)}")
    update = st.get("update")
    if update:
        what = f"rolling back from version {update['rollback_of']}: {update['reason']}" if update.get("rollback_of") else update["summary"]
        how = " (drain-all)" if update.get("drain_all") else ""
        out.append(f"update {update['from']} -> {update['to']}{how}: {update['progress']}; {what}")
    elif st.get("last_update"):
        out.append(f"last update: {st['last_update']}")
    p50, p99 = ms(st["complete_latency_p50_s"]), ms(st["complete_latency_p99_s"])
    out.append(f"acked {st['trees_acked']}, failed {st['trees_failed']} message ids; complete latency p50 {p50} ms, p99 {p99} ms")
    r = st["replays"]
    out.append(f"replayed {sum(r.values())} (fail {r['fail']}, timeout {r['timeout']}, restart {r['restart']})")
    if st.get("batches"):
        b = st["batches"]
        out.append(f"batches committed {b['committed']}, replayed {b['replayed']}; last txid {b['last_txid']}")
    out.append(
        f"{'COMPONENT':<16} {'EXEC':>4} {'TASKS':>5} {'EMITTED':>9} {'EXECUTED':>9} {'ACKED':>9} {'FAILED':>7} {'EXEC p99 ms':>11} {'CAPACITY':>8} {'LAG':>7}"
    )
    for comp, c in st["components"].items():
        out.append(
            f"{comp:<16} {c['executors']:>4} {c['tasks']:>5} {c['emitted']:>9} {c['executed']:>9} {c['acked']:>9} {c['failed']:>7} "
            f"{ms(c['execute_latency_p99_s']):>11} {c['capacity']:>8.3f} {c['lag']:>7}"
        )
    for o in st["outputs"]:
        out.append(f"output topic        {o['topic']} (written by {o['component']}, {o['kind']})")
    broker = st.get("embedded_broker")
    if broker:
        out.append(f"embedded broker (supervisor {broker['supervisor']}): {broker['rss_bytes'] / 2**20:,.0f} MB resident and growing (for trying Squall only)")
    for comp, c in st["components"].items():
        if sum(c.get("reexecuted", {}).values()):
            counts = ", ".join(f"{cause} {n}" for cause, n in c["reexecuted"].items())
            out.append(f"bolt {comp} executed {sum(c['reexecuted'].values())} tuples again after crashes ({counts})")
        if c.get("held_back_s"):
            out.append(f"spout {comp} held back {c['held_back_s']:.1f} s at its pending bound (backpressure; bolt input lag is in LAG)")
    for comp, c in st["components"].items():
        if c["errors"]:
            counts = ", ".join(f"{cause} {n}" for cause, n in c["errors"].items())
            out.append(f"errors of {comp:<9} {counts}")
    if st["component_errors"]:
        out.append(f"last errors (squall errors {st['name']} shows more):")
        for r in st["component_errors"]:
            out.append("  " + ErrorReport(**r).line())
    unreachable = st.get("unreachable") or []
    for u in unreachable:
        out.append(
            f"supervisor {u['supervisor']} unreachable: its workers {', '.join(u['workers'])} published no stats for {u['silent_s']:.0f} s"
            " (cut off from the broker: their leases lapsed and they are paused; their tasks move to other supervisors)"
        )
    gone = {u["supervisor"] for u in unreachable}
    for w in st.get("silent_workers") or []:
        if w["supervisor"] not in gone:
            out.append(f"worker {w['worker']} on {w['supervisor']} (pid {w['pid']}) published no stats for {w['silent_s']:.0f} s: its lease lapsed, paused")
    if st.get("lease_pauses"):
        workers = ", ".join(st.get("lease_paused_workers") or []) or "?"
        out.append(
            f"executors of {workers} paused {st['lease_pauses']} times, {st.get('lease_paused_s', 0.0):.1f} s in all: the broker confirmed none of"
            " their worker's stats for 3 s (a cut, a paused broker or a starved host; see the worker logs)"
        )
    if st.get("fenced_tuples") or st.get("fenced_acker_ops") or st.get("fenced_commits"):
        out.append(
            f"fenced writes: {st.get('fenced_tuples', 0)} tuples and {st.get('fenced_acker_ops', 0)} acker ops"
            f" from replaced workers were dropped (their trees replayed), and {st.get('fenced_commits', 0)} of their late offset commits undone"
        )
    if st.get("contested_tasks"):
        out.append(f"ALERT: tasks claimed by two live workers: {', '.join(st['contested_tasks'])}")
    for e in st["errors"]:
        if e.get("event") == "refused":
            out.append(f"supervisor {e['supervisor']}: {e['reason']}")
            continue
        if e.get("event") == "failed_install":
            out.append(f"supervisor {e['supervisor']} cannot run it: {e['reason']}")
            continue
        if e.get("event") == "fenced":
            out.append(f"worker w{e['worker']} ({e['components']}) on {e['supervisor']} was fenced: another process claimed its tasks")
            continue
        out.append(f"worker w{e['worker']} ({e['components']}) on {e['supervisor']} exited with {e['exit_code']}{' (gave up)' if e['gave_up'] else ''}")
    return out


def errors_text(name: str, reports: list[ErrorReport], component: str | None, limit: int, traceback: bool, as_json: bool) -> list[str]:
    """``squall errors NAME [COMPONENT]``: the last ``limit`` reports (``reports``: already of ``component``, if given)."""
    if as_json:
        return [errors_json(reports, limit)]
    if not reports:
        return [f"{name}: no errors reported{f' by {component}' if component else ''}"]
    return error_lines(reports, limit, traceback)


def dlq_list_text(name: str, letters: list[DeadLetter], component: str | None, cause: str | None, limit: int) -> list[str]:
    """``squall dlq NAME list``: the last ``limit`` dead letters chosen by ``component`` and ``cause``, one line each."""
    chosen = choose(letters, (), component, cause)
    if not chosen:
        return [f"{name}: no dead letters{' chosen' if component or cause else ''}"]
    return [d.line() for d in (chosen[-limit:] if limit > 0 else [])]
