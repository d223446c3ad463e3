"""The Squall UI: Storm UI's pages and actions, served by every supervisor beside ``/api/v1``.

Pages (GET, HTML rendered on the server from what the REST API reads,
:class:`~service.query.live.LiveStatus`; htmx refreshes the live parts):

* ``/``: the cluster: supervisors, topologies, the version;
* ``/topology/<name>``: summary, stats over Storm's windows, the graph, spout lag, the
  configuration with each key's source, the actions and their history;
* ``/topology/<name>/component/<id>``: per executor and task stats, errors with tracebacks,
  input lag, the workers' log links;
* ``/topology/<name>/trace`` (``?root=<id>``: one tree): sampled trees as timelines;
* ``/topology/<name>/dlq`` (``?offset=N``: one dead letter): list, show, replay.

Actions (POST, :mod:`service.ui.security`): ``/login``, ``/logout``,
``/topology/<name>/action/<verb>`` (activate, deactivate, rebalance, kill, log_level, debug)
and ``/topology/<name>/dlq/replay``. Each is written to the control topic with who and when
(:func:`service.control.record.audited`); kill and rebalance wait in a background thread, as
``storm kill -w`` and ``storm rebalance`` do, and the page shows the status as it changes.

Static files (``/static/...``): the stylesheet, the graph's script, and htmx and dagre, vendored
from npm with their licences (``static/vendor/VENDORED.md``); nothing comes from a CDN.
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from service.control.client import (
    Client,
    kill_topology,
    parse_executors,
    rebalance_topology,
    set_active,
    set_debug_tracing,
    set_log_level,
    spout_ids,
)
from service.exceptions import BrokerError, ControlError, UsageError
from service.query.dlq import choose, full_report, replay
from service.query.live import LiveStatus
from service.ui.exceptions import ActionRefused, PageNotFound
from service.ui.pages import Pages
from service.ui.security import CSRF_COOKIE, SESSION_COOKIE, SESSION_S, Gate, check_csrf, cookies, new_csrf
from streams.exceptions import SquallError

log = logging.getLogger("squall.ui")

STATIC_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
VERBS = ("activate", "deactivate", "rebalance", "kill", "log_level", "debug")
WRITTEN_AT_ONCE = frozenset({"activate", "deactivate", "log_level", "debug"})
"""Actions whose control record is written before the response (kill and rebalance run in the background)."""
"""The actions of a topology page (Storm UI's, with set_log_level and debug)."""


@dataclass
class Request:
    """An HTTP request as the UI sees it: ``query`` and ``form`` map a name to its first value; ``headers`` are lower-case."""

    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    form: dict[str, str] = field(default_factory=dict)
    peer: str = "127.0.0.1"


@dataclass
class Response:
    """An HTTP response: status, body, content type and extra headers (``Set-Cookie``, ``Location``, caching)."""

    status: int
    body: bytes
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)


def parse_form(body: bytes) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body: each name's first value; repeated ``offset`` values are joined with commas.

    >>> parse_form(b"csrf=a&offset=3&offset=5&name=ann+b")
    {'csrf': 'a', 'offset': '3,5', 'name': 'ann b'}
    """
    out: dict[str, str] = {}
    for k, v in urllib.parse.parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
        out[k] = f"{out[k]},{v}" if k in out and k == "offset" else out.get(k, v)
    return out


class UiApp:
    """Routes a :class:`Request` to a page or an action (module docstring). Thread-safe: the HTTP server calls it from several threads.

    Args:
      live: the tails the pages read.
      client: the control-plane client the actions write through.
      gate: the admin token and sessions.
      version: ``squall <version>``.
      clock: wall-clock seconds.
      background: runs a waiting action (kill, rebalance) without holding the request (default: a daemon thread).
    """

    def __init__(
        self,
        live: LiveStatus,
        client: Client,
        gate: Gate,
        version: str,
        clock: Callable[[], float] = time.time,
        background: Callable[[str, Callable[[], str]], None] | None = None,
    ) -> None:
        self.live = live
        self.client = client
        self.gate = gate
        self.version = version
        self.clock = clock
        self.pages = Pages(version)
        self.background = background or self._thread
        self.static = files("service.ui") / "static"

    # -- entry ---------------------------------------------------------------------------------
    def handle(self, req: Request) -> Response:
        """The response to ``req``: a page, a redirect after an action, a static file, or an error page (403, 404, 500)."""
        jar = cookies(req.headers.get("cookie"))
        csrf = jar.get(CSRF_COOKIE) or new_csrf()
        try:
            if req.method == "POST":
                resp = self._post(req, jar)
            elif req.path.startswith("/static/"):
                return self._static(req.path.removeprefix("/static/"))
            else:
                resp = self._get(req, jar, csrf)
        except PageNotFound as exc:
            resp = Response(404, self.pages.message("Not found", str(exc), csrf, self._user(jar)))
        except ActionRefused as exc:
            resp = Response(403, self.pages.message("Refused", str(exc), csrf, self._user(jar)))
        except SquallError as exc:
            log.warning("ui: %s %s failed: %s", req.method, req.path, exc)
            resp = Response(500, self.pages.message("Error", str(exc), csrf, self._user(jar)))
        if CSRF_COOKIE not in jar:
            resp.headers.append(("Set-Cookie", f"{CSRF_COOKIE}={csrf}; Path=/; SameSite=Strict"))
        resp.headers += [("X-Frame-Options", "DENY"), ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store")]
        return resp

    def _user(self, jar: dict[str, str]) -> dict[str, Any]:
        return {"actions": self.gate.enabled, "name": self.gate.name(jar.get(SESSION_COOKIE))}

    # -- pages ---------------------------------------------------------------------------------
    def _get(self, req: Request, jar: dict[str, str], csrf: str) -> Response:
        parts = [urllib.parse.unquote(p) for p in req.path.split("/") if p]
        user = self._user(jar)
        part = req.query.get("part")
        if not parts:
            html = self.pages.cluster(self.live.supervisors(), self.live.rows(), self.clock(), csrf, user)
            return Response(200, html)
        if parts[0] != "topology" or len(parts) < 2:
            raise PageNotFound(f"no page at {req.path!r} (try / for the cluster)")
        name = parts[1]
        st = self._status(name)
        now = self.clock()
        msg = req.query.get("msg", "")
        if len(parts) == 2:
            shape = self.live.shape(name)
            return Response(200, self.pages.topology(st, shape, now, csrf, user, msg, part, req.query.get("window", ":all-time")))
        if len(parts) == 4 and parts[2] == "component":
            cid = parts[3]
            if cid not in st["components"]:
                raise PageNotFound(f"[{name}] has no component {cid!r} (it has {', '.join(sorted(st['components']))})")
            reports = [r for r in self.live.error_reports(name) if r.component == cid]
            return Response(200, self.pages.component(st, cid, reports, self.live.log_links(name), now, csrf, user, part))
        if len(parts) == 3 and parts[2] == "trace":
            trees = self.live.trees(name)
            root = req.query.get("root")
            if root:
                try:
                    chosen = int(root, 16)
                except ValueError:
                    raise PageNotFound(f"[{name}] {root!r} is not a root id (16 hex digits)") from None
                if chosen not in trees:
                    raise PageNotFound(f"[{name}] no sampled tree {root} (it may be older than the trees kept)")
                return Response(200, self.pages.tree(st, chosen, trees[chosen], csrf, user))
            return Response(200, self.pages.trace(st, trees, csrf, user, req.query.get("held_by")))
        if len(parts) == 3 and parts[2] == "dlq":
            letters, total = self.live.dead_letters(name)
            offset = req.query.get("offset")
            if offset:
                found = [d for d in letters if str(d.offset) == offset]
                if not found:
                    raise PageNotFound(f"[{name}] no dead letter @{offset} among the last {len(letters)}")
                reports = self.live.error_reports(name)
                return Response(200, self.pages.dead_letter(st, found[0], reports, full_report(found[0], reports), csrf, user))
            return Response(200, self.pages.dead_letters(st, letters, total, csrf, user, msg))
        raise PageNotFound(f"no page at {req.path!r}")

    def _status(self, name: str) -> dict[str, Any]:
        try:
            return self.live.status(name)
        except ControlError as exc:
            raise PageNotFound(str(exc)) from exc

    def _static(self, rel: str) -> Response:
        parts = [p for p in rel.split("/") if p]
        if not parts or any(p in (".", "..") or p.startswith(".") for p in parts):
            return Response(404, b"not found\n", "text/plain")
        path = self.static.joinpath(*parts)
        suffix = "." + parts[-1].rsplit(".", 1)[-1] if "." in parts[-1] else ""
        if suffix not in STATIC_TYPES or not path.is_file():
            return Response(404, b"not found\n", "text/plain")
        return Response(200, path.read_bytes(), STATIC_TYPES[suffix], [("Cache-Control", "max-age=3600")])

    # -- actions -------------------------------------------------------------------------------
    def _post(self, req: Request, jar: dict[str, str]) -> Response:
        bearer = self.gate.bearer(req.headers.get("authorization"))
        if not bearer:
            check_csrf(jar.get(CSRF_COOKIE), req.form.get("csrf"), req.headers.get("origin"), req.headers.get("host"))
        parts = [urllib.parse.unquote(p) for p in req.path.split("/") if p]
        if parts == ["login"]:
            sid = self.gate.login(req.form.get("token", ""), req.form.get("name", ""))
            cookie = f"{SESSION_COOKIE}={sid}; Path=/; HttpOnly; SameSite=Strict; Max-Age={int(SESSION_S)}"
            return self._redirect(req.form.get("next", "/"), "logged in", [("Set-Cookie", cookie)])
        if parts == ["logout"]:
            self.gate.logout(jar.get(SESSION_COOKIE))
            return self._redirect(req.form.get("next", "/"), "logged out", [("Set-Cookie", f"{SESSION_COOKIE}=; Path=/; Max-Age=0")])
        who = self.gate.who(jar.get(SESSION_COOKIE), req.peer, bearer)
        if len(parts) == 4 and parts[0] == "topology" and parts[2] == "action" and parts[3] in VERBS:
            name = parts[1]
            self._status(name)  # 404 for an unknown topology
            try:
                done = self._act(name, parts[3], req.form, who)
                if parts[3] in WRITTEN_AT_ONCE:
                    self._read_own_write(name)
            except (ControlError, UsageError) as exc:
                done = f"refused: {exc}"
            log.info("[%s] ui action %s by %s: %s", name, parts[3], who, done)
            return self._redirect(f"/topology/{urllib.parse.quote(name)}", done)
        if len(parts) == 4 and parts[0] == "topology" and parts[2:] == ["dlq", "replay"]:
            name = parts[1]
            self._status(name)
            try:
                done = self._replay(name, req.form.get("offset", ""), who)
            except (ControlError, UsageError) as exc:
                done = f"refused: {exc}"
            log.info("[%s] ui dead-letter replay by %s: %s", name, who, done)
            return self._redirect(f"/topology/{urllib.parse.quote(name)}/dlq", done)
        raise PageNotFound(f"no action at {req.path!r}")

    def _read_own_write(self, name: str) -> None:
        """Let the next page show the control record an action just wrote; if the log cannot be read in time, it shows it a poll later."""
        try:
            self.live.read_own_write()
        except BrokerError as exc:
            log.warning("[%s] ui: the control log was not read to its end after an action: %s", name, exc)

    def _act(self, name: str, verb: str, form: dict[str, str], who: str) -> str:
        now = self.clock()
        if verb in ("activate", "deactivate"):
            return set_active(self.client, name, verb == "activate", now, who=who)
        if verb == "debug":
            on = form.get("state", "on") == "on"
            return set_debug_tracing(self.client, name, on, _number(form.get("sampling_pct", "10"), "sampling_pct", name), now, who=who)
        if verb == "log_level":
            logger, level = form.get("logger", "").strip() or "ROOT", form.get("level", "INFO").strip().upper()
            seconds = form.get("seconds", "").strip()
            if level == "RESET":
                return set_log_level(self.client, name, [], [logger], now, who=who)
            return set_log_level(self.client, name, [f"{logger}={level}" + (f":{seconds}" if seconds else "")], [], now, who=who)
        if verb == "kill":
            wait = _number(form.get("wait", "30"), "wait", name)
            self.background(f"kill-{name}", lambda: kill_topology(self.client, name, wait, now, who=who))
            return f"killing {name}: the spouts stop now, the workers in {wait:g} s"
        raw_workers = form.get("workers", "").strip()
        workers = int(_number(raw_workers, "workers", name)) if raw_workers else None
        executors = parse_executors([p.strip() for p in form.get("executors", "").split(",") if p.strip()])
        self.background(f"rebalance-{name}", lambda: rebalance_topology(self.client, name, workers, executors, now, who=who))
        return f"rebalancing {name}" + (f": workers {workers}" if workers else "") + "".join(f", {c}={n}" for c, n in executors.items())

    def _replay(self, name: str, offsets: str, who: str) -> str:
        wanted = [int(o) for o in offsets.split(",") if o.strip().isdigit()]
        if not wanted:
            raise UsageError(f"[{name}] choose the dead letters to replay")
        letters, _ = self.live.dead_letters(name)
        chosen = choose(letters, wanted)
        missing = sorted(set(wanted) - {d.offset for d in chosen})
        if missing:
            raise UsageError(f"[{name}] no dead letter at {', '.join(f'@{m}' for m in missing)}")
        per_topic = replay(self.client.bootstrap, name, chosen, spout_ids(self.client, name))
        return f"replayed {len(chosen)} dead letters ({', '.join(f'{t}: {n}' for t, n in per_topic.items())}) as {who}"

    def _thread(self, label: str, work: Callable[[], str]) -> None:
        def run() -> None:
            try:
                log.info("ui: %s", work())
            except SquallError as exc:
                log.warning("ui: %s failed: %s", label, exc)

        threading.Thread(target=run, name=f"ui-{label}", daemon=True).start()

    @staticmethod
    def _redirect(to: str, msg: str, headers: list[tuple[str, str]] | None = None) -> Response:
        target = to if to.startswith("/") and not to.startswith("//") else "/"
        sep = "&" if "?" in target else "?"
        return Response(303, b"", "text/plain", [("Location", f"{target}{sep}msg={urllib.parse.quote(msg)}"), *(headers or [])])


def _number(raw: str, what: str, name: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"[{name}] {what} must be a number, got {raw!r}") from None
    if value < 0:
        raise UsageError(f"[{name}] {what} must be >= 0, got {raw!r}")
    return value
