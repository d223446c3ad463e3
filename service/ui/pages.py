"""The UI's pages rendered to HTML (Jinja2, autoescaped) from the dicts the REST API reads: pure functions of their arguments.

Each page is a template under ``templates/`` with the layout of ``base.html``. A ``part``
argument renders only a page's live section (htmx swaps it every few seconds). Numbers follow
Storm UI: latencies in milliseconds with three decimals, capacity with three, uptimes as
``1d 2h 3m 4s``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from service.query.dlq import DeadLetter, explain
from service.query.trace import held_summary, timed_out
from service.query.views import pretty
from service.query.windows import mean_s, window_row
from service.ui.graph import graph
from streams.monitoring.errors import ErrorReport
from streams.monitoring.trace import TraceEvent, diagnose, holders, outcome, timeline


def ms(seconds: float | None) -> str:
    """Seconds as Storm UI's milliseconds (``"-"`` when unknown)."""
    return "-" if seconds is None else f"{seconds * 1000:.3f}"


def clock_time(at: float | None) -> str:
    """Wall seconds as local ``YYYY-MM-DD HH:MM:SS`` (``"-"`` for none)."""
    return "-" if not at else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def count(value: float | int | None) -> str:
    """A count with thousands separators."""
    return "-" if value is None else f"{int(value):,}"


def _env() -> Environment:
    env = Environment(loader=PackageLoader("service.ui", "templates"), autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
    env.filters.update(pretty=pretty, ms=ms, clock=clock_time, count=count)
    return env


def timeline_rows(events: list[TraceEvent]) -> tuple[float, list[dict[str, Any]]]:
    """A tree's events as one row per ``(component, task)``: ``(span in seconds, [{"component", "task", "worker", "marks": [...]}])``.

    A mark: ``event``, ``at`` (seconds after the tree's first event), ``left`` (0-100, its place
    on the row) and ``title``. Rows follow the order components first appear in.
    """
    ordered = sorted(events, key=lambda e: e.at)
    if not ordered:
        return 0.0, []
    start = ordered[0].at
    span = max(ordered[-1].at - start, 1e-6)
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for e in ordered:
        row = rows.setdefault((e.component, e.task), {"component": e.component, "task": e.task, "worker": e.worker, "marks": []})
        detail = f" edge {e.edge:016x}" if e.edge else ""
        target = f" -> [{e.target}]" if e.target else ""
        row["marks"].append(
            {"event": e.event, "at": e.at - start, "left": round(100 * (e.at - start) / span, 2), "title": f"+{e.at - start:.3f}s {e.event}{detail}{target}"}
        )
    return span, list(rows.values())


class Pages:
    """Renders each page (module docstring).

    Args:
      version: what the footer says (``squall <version>``).
    """

    def __init__(self, version: str) -> None:
        self.version = version
        self.env = _env()

    def _render(self, template: str, **ctx: Any) -> bytes:
        return self.env.get_template(template).render(version=self.version, **ctx).encode()

    def message(self, title: str, text: str, csrf: str, user: dict[str, Any]) -> bytes:
        """An error page (404, 403, 500) with one message."""
        return self._render("message.html", title=title, text=text, csrf=csrf, user=user, next="/")

    def cluster(self, supervisors: list[dict[str, Any]], rows: list[dict[str, Any]], now: float, csrf: str, user: dict[str, Any]) -> bytes:
        """``/``: the supervisors up, the topologies, the version."""
        return self._render("cluster.html", title="Cluster", supervisors=supervisors, rows=rows, now=now, csrf=csrf, user=user, next="/")

    def topology(
        self,
        st: dict[str, Any],
        shape: dict[str, Any],
        now: float,
        csrf: str,
        user: dict[str, Any],
        msg: str = "",
        part: str | None = None,
        window: str = ":all-time",
    ) -> bytes:
        """``/topology/<name>``: summary, windowed stats, graph, lag, configuration, actions (``part="live"``: only the live section).

        ``window``: the spouts' and bolts' tables' window (Storm's ``window`` parameter: ``600``, ``10800``, ``86400`` or ``:all-time``).
        """
        if window not in st["windows"]:
            window = ":all-time"
        g = graph(st, shape.get("inputs", {}), now)
        conf_rows = [
            {"key": k, "value": json.dumps(v), "source": st["configuration_sources"].get(k, "default")} for k, v in sorted(st["configuration"].items())
        ]
        for comp, keys in sorted(st["component_configuration"].items()):
            conf_rows += [{"key": k, "value": json.dumps(v), "source": f"component [{comp}]"} for k, v in sorted(keys.items())]
        spouts = [c for c, v in st["components"].items() if v["kind"] == "spout"]
        stats = []
        for key, w in st["windows"].items():
            row = window_row(w["components"], spouts)
            stats.append({"key": key, "label": w["label"], "since": w["since"] if w["partial"] else None, **row, "complete_ms": ms(row["complete_s"])})
        ctx = {
            "title": f"Topology {st['name']}",
            "st": st,
            "graph": g,
            "graph_json": Markup(json.dumps(g).replace("<", "\\u003c")),
            "stats": stats,
            "component_windows": self._component_windows(st),
            "conf_rows": conf_rows,
            "now": now,
            "csrf": csrf,
            "user": user,
            "msg": msg,
            "window": window,
            "next": f"/topology/{st['name']}",
        }
        return self._render("topology_live.html" if part == "live" else "topology.html", **ctx)

    @staticmethod
    def _component_windows(st: dict[str, Any]) -> list[dict[str, Any]]:
        """Per window, per component: the window's counts and mean latencies (ms), for the spouts and bolts tables."""
        out = []
        for key, w in st["windows"].items():
            rows = []
            for cid, c in st["components"].items():
                v = w["components"].get(cid, {})
                rows.append(
                    {
                        "id": cid,
                        "kind": c["kind"],
                        "executors": c["executors"],
                        "tasks": c["tasks"],
                        "emitted": v.get("emitted", 0.0),
                        "transferred": v.get("transferred", 0.0),
                        "executed": v.get("executed", 0.0),
                        "acked": v.get("acked", 0.0),
                        "failed": v.get("failed", 0.0),
                        "execute_ms": ms(mean_s(v, "execute")),
                        "process_ms": ms(mean_s(v, "process")),
                        "complete_ms": ms(mean_s(v, "complete")),
                        "capacity": c["capacity"],
                        "lag": c["lag"],
                        "last_error": c.get("last_error"),
                    }
                )
            out.append({"key": key, "label": w["label"], "since": w["since"] if w["partial"] else None, "rows": rows})
        return out

    def component(
        self,
        st: dict[str, Any],
        cid: str,
        reports: list[ErrorReport],
        log_links: dict[str, str],
        now: float,
        csrf: str,
        user: dict[str, Any],
        part: str | None = None,
    ) -> bytes:
        """``/topology/<name>/component/<id>``: per executor and per task, errors (newest first, with tracebacks), input lag, log links."""
        c = st["components"][cid]
        tasks = []
        for ex in c["executor_stats"]:
            # A task is a partition of the component's input: its tasks, in order, read its partitions in order (task base + partition).
            parts = sorted(ex["lag"], key=_partition_number)
            paired = len(parts) == len(ex["tasks"])
            for i, task in enumerate(sorted(ex["tasks"])):
                mine = [parts[i]] if paired else []
                lag = sum(ex["lag"][p] for p in mine) if paired else None
                tasks.append({"task": task, "worker": ex["worker"], "instance": ex["instance"], "lag": lag, "partitions": mine})
        ctx = {
            "title": f"Component {cid}",
            "st": st,
            "cid": cid,
            "c": c,
            "tasks": sorted(tasks, key=lambda t: t["task"]),
            "reports": list(reversed(reports)),
            "log_links": log_links,
            "now": now,
            "csrf": csrf,
            "user": user,
            "next": f"/topology/{st['name']}/component/{cid}",
        }
        return self._render("component_live.html" if part == "live" else "component.html", **ctx)

    def trace(self, st: dict[str, Any], trees: dict[int, list[TraceEvent]], csrf: str, user: dict[str, Any], held_by: str | None = None) -> bytes:
        """``/topology/<name>/trace``: the timed-out trees grouped by the component that held them longest (holder first), then every tree, newest first."""
        late = timed_out(trees)
        groups: dict[str, list[int]] = {}
        for root in late:
            hs = holders(trees[root]) or ["(none)"]
            groups.setdefault(hs[0], []).append(root)
        ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        if held_by:
            ordered = [(h, roots) for h, roots in ordered if held_by in h.split(" -> ")]
        rows = [
            {"root": f"{root:016x}", "outcome": outcome(ev), "events": len(ev), "spout": ev[0].component, "at": ev[0].at, "holders": holders(ev)}
            for root, ev in sorted(trees.items(), key=lambda kv: -kv[1][0].at)[:200]
        ]
        ctx = {
            "title": f"Trace {st['name']}",
            "st": st,
            "groups": [{"holder": h, "label": _holder_label(h), "roots": [f"{r:016x}" for r in roots]} for h, roots in ordered],
            "summary": held_summary(trees, late),
            "late": len(late),
            "rows": rows,
            "total": len(trees),
            "held_by": held_by,
            "csrf": csrf,
            "user": user,
            "next": f"/topology/{st['name']}/trace",
        }
        return self._render("trace.html", **ctx)

    def tree(self, st: dict[str, Any], root: int, events: list[TraceEvent], csrf: str, user: dict[str, Any]) -> bytes:
        """One sampled tree: a timeline with one row per component and task, its events as text, and who held it."""
        span, rows = timeline_rows(events)
        ended = outcome(events)
        ctx = {
            "title": f"Tree {root:016x}",
            "st": st,
            "root": f"{root:016x}",
            "outcome": ended,
            "span": span,
            "rows": rows,
            "lines": timeline(events),
            "holders": [_holder_label(h) for h in holders(events)] if ended != "complete" else [],
            "diagnosis": diagnose(events) if ended != "complete" else [],
            "csrf": csrf,
            "user": user,
            "next": f"/topology/{st['name']}/trace?root={root:016x}",
        }
        return self._render("tree.html", **ctx)

    def dead_letters(self, st: dict[str, Any], letters: list[DeadLetter], total: int, csrf: str, user: dict[str, Any], msg: str = "") -> bytes:
        """``/topology/<name>/dlq``: the dead letters, newest first, each with the component that failed it, and a replay form."""
        rows = [
            {
                "offset": d.offset,
                "when": float(d.headers["last.failure"]) if d.headers.get("last.failure") else None,
                "failed_by": d.failed_by,
                "writer": d.component,
                "cause": d.cause,
                "attempts": d.headers.get("attempts", "?"),
                "source": "{}[{}]@{}".format(*d.source),
                "error": d.headers.get("error", ""),
            }
            for d in reversed(letters)
        ]
        ctx = {"title": f"Dead letters {st['name']}", "st": st, "rows": rows, "total": total, "csrf": csrf, "user": user, "msg": msg}
        return self._render("dlq.html", next=f"/topology/{st['name']}/dlq", **ctx)

    def dead_letter(
        self, st: dict[str, Any], letter: DeadLetter, reports: list[ErrorReport], full: ErrorReport | None, csrf: str, user: dict[str, Any]
    ) -> bytes:
        """One dead letter: its headers, key and value, why it failed, and the traceback of the last full error report for that record."""
        ctx = {
            "title": f"Dead letter @{letter.offset}",
            "st": st,
            "d": letter,
            "key": _text(letter.key),
            "value": _text(letter.value),
            "report": explain(letter, reports),
            "full": full,
            "csrf": csrf,
            "user": user,
            "next": f"/topology/{st['name']}/dlq?offset={letter.offset}",
        }
        return self._render("dead_letter.html", **ctx)


def _partition_number(part: str) -> int:
    """``7`` of ``"squall.wc.split[7]"`` (-1 for another shape)."""
    head, _, tail = part.rpartition("[")
    return int(tail.rstrip("]")) if head and tail.rstrip("]").isdigit() else -1


def _holder_label(holder: str) -> str:
    ends = holder.split(" -> ")
    return " -> ".join(f"[{c}]" for c in ends) + (" (in transit)" if len(ends) > 1 else "")


def _text(raw: bytes | None) -> str:
    if raw is None:
        return "(null)"
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.hex(" ")
