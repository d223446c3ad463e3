"""The topology drawn as a graph (Storm UI's "Topology Visualization"): nodes and edges from a status dict, laid out in the browser by dagre.

Nodes are the components, sized by capacity; edges are subscriptions, labelled with their
grouping (and fields) and their rate over the last 10 minutes. A node's state colours it:

* ``error``: it reported an error in the last 10 minutes;
* ``busy``: back-pressure: a bolt's capacity is at least :data:`BUSY_CAPACITY` (it executes
  for that share of the time), or a spout is behind its input and was held back at its
  pending bound;
* ``ok`` otherwise.

The page embeds :func:`graph` as JSON for ``static/graph.js``, and lists the same nodes and
edges as tables, so the graph is readable without JavaScript and by a screen reader.

>>> st = {"name": "wc", "windows": {"600": {"seconds": 600.0, "since": 0.0, "components": {"lines": {"transferred": 6000.0}}}},
...       "components": {"lines": {"kind": "spout", "capacity": 0.0, "executors": 1, "tasks": 1, "last_error": None, "held_back_s": 0.0},
...                      "split": {"kind": "bolt", "capacity": 0.9, "executors": 2, "tasks": 4, "last_error": None}}}
>>> g = graph(st, {"lines": [], "split": [{"component": "lines", "stream": "default", "grouping": "shuffle", "fields": []}]}, now=600.0)
>>> [(n["id"], n["state"]) for n in g["nodes"]], g["edges"][0]["label"]
([('lines', 'ok'), ('split', 'busy')], 'shuffle · 10.0/s')
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

BUSY_CAPACITY = 0.8
"""A bolt whose capacity reaches this is drawn busy (Storm UI colours capacity near 1 red)."""

RECENT_ERROR_S = 600.0
"""An error younger than this (seconds) colours its component."""


def node_state(c: dict[str, Any], now: float) -> str:
    """``error``, ``busy`` or ``ok`` (module docstring)."""
    err = c.get("last_error")
    if err and now - float(err.get("at", 0.0)) <= RECENT_ERROR_S:
        return "error"
    if c["kind"] != "spout" and float(c.get("capacity", 0.0)) >= BUSY_CAPACITY:
        return "busy"
    if c["kind"] == "spout" and float(c.get("held_back_s", 0.0)) > 0 and int(c.get("lag", 0)) > 0:
        return "busy"  # behind its input, and held back at its pending bound (back-pressure from the bolts)
    return "ok"


def rate_per_s(st: dict[str, Any], component: str, now: float) -> float:
    """Tuples per second ``component`` transferred over the last 10 minutes (or since the history began)."""
    w = st.get("windows", {}).get("600")
    if not w:
        return 0.0
    span = max(1.0, now - float(w["since"]))  # the window's baseline sample is at "since"
    return float(w["components"].get(component, {}).get("transferred", 0.0)) / span


def graph(st: dict[str, Any], inputs: dict[str, list[dict[str, Any]]], now: float) -> dict[str, Any]:
    """``{"nodes": [...], "edges": [...]}`` of topology ``st`` (:func:`service.query.status.status`'s dict).

    ``inputs``: the shape's ``component -> subscriptions``. A node: ``id``, ``kind``,
    ``executors``, ``tasks``, ``capacity``, ``state``, ``size`` (its width in pixels, 120-200
    by capacity) and ``href`` (its component page). An edge: ``source``, ``target``, ``stream``,
    ``grouping``, ``fields``, ``rate`` (tuples/s) and ``label``.
    """
    name = st["name"]
    nodes = []
    for cid, c in st["components"].items():
        capacity = min(1.0, float(c.get("capacity", 0.0)))
        nodes.append(
            {
                "id": cid,
                "kind": c["kind"],
                "executors": c["executors"],
                "tasks": c["tasks"],
                "capacity": capacity,
                "state": node_state(c, now),
                "size": round(120 + 80 * capacity),
                "href": f"/topology/{quote(name)}/component/{quote(cid)}",
            }
        )
    edges = []
    for target, subs in inputs.items():
        if target not in st["components"]:
            continue
        for sub in subs:
            if sub["component"] not in st["components"]:
                continue
            rate = rate_per_s(st, sub["component"], now)
            grouping = sub["grouping"] + (f"({', '.join(sub['fields'])})" if sub.get("fields") else "")
            stream = "" if sub["stream"] == "default" else f"{sub['stream']}: "
            edges.append(
                {
                    "source": sub["component"],
                    "target": target,
                    "stream": sub["stream"],
                    "grouping": sub["grouping"],
                    "fields": list(sub.get("fields", [])),
                    "rate": round(rate, 1),
                    "label": f"{stream}{grouping} · {rate:.1f}/s",
                }
            )
    return {"nodes": nodes, "edges": edges}
