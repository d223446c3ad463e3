"""A supervisor's HTTP endpoints: ``/healthz``, ``/readyz``, ``/metrics`` and the Storm UI's REST API.

``/healthz``: 200 while the process serves requests (Kubernetes liveness).
``/readyz``: 200 when the supervisor is ready (it holds its slots, it has read the control
topic, and every worker it runs has its tasks assigned and its acker state restored),
else 503 with the reason (readiness). ``/metrics``: the registry passed in, in
Prometheus' text format. ``/squall/v1/...``: the reading verbs' output
(:mod:`service.supervisor.verbs_api`). ``/api/v1/...``: a read-only subset of the Storm UI's REST API
(:mod:`service.supervisor.storm_api`), JSON. ``/logs/<topology>/<worker>?offset=N``: this supervisor's log
of that worker (:mod:`service.query.logs`). Every other path is the UI's (:mod:`service.ui.app`): its
pages at ``/``, its static files, and its actions (POST). Binds to 127.0.0.1 unless ``squall.http.host`` says otherwise.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from service.query.logs import NEXT_OFFSET, read_log
from service.supervisor.verbs_api import PREFIX as VERBS_PREFIX
from service.supervisor.verbs_api import VerbsApi
from service.ui.app import Request, Response, parse_form

log = logging.getLogger("squall.http")

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"
API_PATH = "/api/v1/"
LOGS_PATH = "/logs/"
MAX_FORM_BYTES = 64 * 1024
"""The largest UI form a POST may send (bytes)."""


class HealthServer:
    """Serves the three endpoints on ``host:port`` (port 0: any free port) from a thread.

    ``ready()`` returns ``(ready, reason)``. ``port`` is the bound port after :meth:`start`.
    """

    def __init__(
        self,
        host: str,
        port: int,
        registry: CollectorRegistry,
        ready: Callable[[], tuple[bool, str]],
        api: Callable[[str], tuple[int, dict[str, Any]]] | None = None,
        logs_dir: Path | None = None,
        ui: Callable[[Request], Response] | None = None,
        verbs: VerbsApi | None = None,
    ) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path == HEALTH_PATH:
                    self._send(200, b"ok\n", "text/plain")
                elif path == READY_PATH:
                    ok, why = outer.ready()
                    self._send(200 if ok else 503, (why + "\n").encode(), "text/plain")
                elif path == METRICS_PATH:
                    self._send(200, generate_latest(outer.registry), CONTENT_TYPE_LATEST)
                elif path.startswith(LOGS_PATH) and outer.logs_dir is not None:
                    query = urllib.parse.parse_qs(self.path.partition("?")[2])
                    try:
                        offset = int(query.get("offset", ["-65536"])[0])
                    except ValueError:
                        offset = -65536
                    status, text, nxt = read_log(outer.logs_dir, path, offset)
                    self._send(status, text, "text/plain; charset=utf-8", {NEXT_OFFSET: str(nxt)})
                elif path.startswith(API_PATH) and outer.api is not None:
                    try:
                        code, body = outer.api(path)
                    except Exception as exc:  # a broker that does not answer, say: the API says so, the server goes on
                        log.warning("http: %s failed: %s", path, exc)
                        code, body = 500, {"error": type(exc).__name__, "errorMessage": str(exc)}
                    self._send(code, json.dumps(body).encode(), "application/json")
                elif path.startswith(VERBS_PREFIX) and outer.verbs is not None:
                    params = {k: v[0] for k, v in urllib.parse.parse_qs(self.path.partition("?")[2]).items()}
                    try:
                        code, body = outer.verbs.handle(path, params)
                    except Exception as exc:  # a broker that does not answer: the verb reads the topics itself
                        log.warning("http: %s failed: %s", path, exc)
                        code, body = 409, {"fallback": f"{type(exc).__name__}: {exc}"}
                    self._send(code, json.dumps(body).encode(), "application/json", outer.verbs.headers())
                elif outer.ui is not None:
                    params = {k: v[0] for k, v in urllib.parse.parse_qs(self.path.partition("?")[2]).items()}
                    self._ui(Request("GET", path, params, self._headers(), {}, self.client_address[0]))
                else:
                    self._send(404, b"not found\n", "text/plain")

            def do_POST(self) -> None:
                path = self.path.split("?")[0]
                length = int(self.headers.get("Content-Length") or 0)
                if outer.ui is None or length > MAX_FORM_BYTES:
                    self._send(404 if outer.ui is None else 413, b"no\n", "text/plain")
                    return
                form = parse_form(self.rfile.read(length))
                self._ui(Request("POST", path, {}, self._headers(), form, self.client_address[0]))

            def _headers(self) -> dict[str, str]:
                return {k.lower(): v for k, v in self.headers.items()}

            def _ui(self, req: Request) -> None:
                assert outer.ui is not None
                try:
                    resp = outer.ui(req)
                except Exception as exc:  # a page that fails says so; the server goes on
                    log.warning("http: ui %s %s failed: %s", req.method, req.path, exc, exc_info=exc)
                    resp = Response(500, f"error: {type(exc).__name__}: {exc}\n".encode(), "text/plain; charset=utf-8")
                self.send_response(resp.status)
                self.send_header("Content-Type", resp.content_type)
                for k, v in resp.headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(resp.body)))
                self.end_headers()
                self.wfile.write(resp.body)

            def _send(self, code: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
                log.debug("http: " + format, *args)

        self.registry = registry
        self.ready = ready
        self.api = api
        self.logs_dir = logs_dir
        self.ui = ui
        self.verbs = verbs
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.host = host
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, name="http", daemon=True)

    def start(self) -> None:
        """Serve in a daemon thread."""
        self.thread.start()

    def close(self) -> None:
        """Stop serving and close the socket."""
        self.server.shutdown()
        self.server.server_close()
