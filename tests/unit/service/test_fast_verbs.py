"""The reading verbs through the local supervisor: what it answers (``/squall/v1``), and when the CLI trusts it or reads the topics itself."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from service.cli.fast import parse, try_fast
from service.exceptions import ControlError
from service.supervisor.verbs_api import VerbsApi
from tests.unit.ui.fakes import FakeLive, report


class Live(FakeLive):
    def __init__(self) -> None:
        super().__init__()
        self.synced: list[str | None] = []
        self.kept_total = 1

    def sync(self, name: str | None = None, timeout_s: float = 1.0) -> None:
        self.synced.append(name)

    def record(self, name: str) -> Any:
        if name != "wc":
            raise ControlError(f"[{name}] no such topology (see: squall list)")
        return object()

    def status(self, name: str) -> dict[str, Any]:
        st = dict(super().status(name))
        for c in st["components"].values():
            c.update(execute_latency_p99_s=0.002, errors={})
        st.update(complete_latency_p50_s=0.01, complete_latency_p99_s=0.05, trees_acked=9, trees_failed=1, outputs=[], errors=[], component_errors=[])
        st["replays"] = {"fail": 1, "timeout": 0, "restart": 0}
        return st

    def dead_letters(self, name: str) -> tuple[list[Any], int]:
        return self.letters, self.kept_total


def test_the_verbs_api_answers_what_the_verbs_print_and_sends_unknown_topologies_back_to_the_topics() -> None:
    live = Live()
    api = VerbsApi(live, "k1:9092", "ns")  # type: ignore[arg-type]
    assert api.headers() == {"X-Squall-Bootstrap": "k1:9092", "X-Squall-Namespace": "ns"}
    code, body = api.handle("/squall/v1/list", {})
    assert code == 200 and body["exit"] == 0 and body["stdout"].splitlines()[1].startswith("wc ") and live.synced == [None]
    code, body = api.handle("/squall/v1/list", {"json": "1"})
    assert json.loads(body["stdout"])[0]["name"] == "wc"
    code, body = api.handle("/squall/v1/status/wc", {})
    assert code == 200 and body["stdout"].startswith("wc  ACTIVE") and "complete latency p50 10.0 ms" in body["stdout"] and live.synced[-1] == "wc"
    code, body = api.handle("/squall/v1/status/wc", {"json": "1"})
    shown = json.loads(body["stdout"])
    assert shown["name"] == "wc" and "windows" not in shown and "actions" not in shown  # squall status --json's keys
    code, body = api.handle("/squall/v1/errors/wc", {"component": "split", "limit": "5"})
    assert code == 200 and report().line() in body["stdout"]
    code, body = api.handle("/squall/v1/errors/wc", {"component": "count"})
    assert body["stdout"] == "wc: no errors reported by count\n"
    code, body = api.handle("/squall/v1/dlq/wc", {"component": "split"})
    assert code == 200 and body["stdout"].startswith("@7 ") and "[split]" in body["stdout"]
    live.kept_total = 5000  # more than the tail keeps: the verb reads them all itself
    assert api.handle("/squall/v1/dlq/wc", {})[0] == 409
    assert api.handle("/squall/v1/status/new", {})[0] == 409  # perhaps submitted a moment ago: the topics say
    assert api.handle("/squall/v1/kill/wc", {})[0] == 404


@pytest.fixture
def supervisor() -> Iterator[dict[str, Any]]:
    """A stand-in supervisor on a free port: answers every path with ``state["status"]``, ``state["headers"]`` and ``state["body"]``."""
    state: dict[str, Any] = {"status": 200, "headers": {"X-Squall-Bootstrap": "127.0.0.1:9092", "X-Squall-Namespace": "squall"}, "paths": []}
    state["body"] = {"stdout": "from the supervisor\n", "stderr": "", "exit": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state["paths"].append(self.path)
            raw = json.dumps(state["body"]).encode()
            self.send_response(state["status"])
            for k, v in state["headers"].items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state["port"] = str(server.server_address[1])
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def test_the_cli_prints_the_supervisors_answer_only_for_its_own_broker_and_namespace(
    supervisor: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"SQUALL_HTTP_PORT": supervisor["port"]}
    assert try_fast(["status", "wc"], env) == 0 and capsys.readouterr().out == "from the supervisor\n"
    assert supervisor["paths"][-1] == "/squall/v1/status/wc"
    assert try_fast(["errors", "wc", "split", "-n", "3", "--traceback"], env) == 0
    assert supervisor["paths"][-1] == "/squall/v1/errors/wc?component=split&limit=3&traceback=1"
    asked = len(supervisor["paths"])
    assert try_fast(["status", "wc"], {**env, "SQUALL_BOOTSTRAP_SERVERS": "other:9092"}) is None  # another broker's supervisor
    assert try_fast(["status", "wc", "--bootstrap-servers", "localhost:9092"], env) == 0  # the same broker, spelled otherwise
    assert try_fast(["status", "wc"], {**env, "SQUALL_CONTROL_NAMESPACE": "other"}) is None
    supervisor["body"] = {"stdout": "", "stderr": "error: [wc] ...\n", "exit": 2}
    assert try_fast(["status", "wc"], env) == 2 and capsys.readouterr().err == "error: [wc] ...\n"
    supervisor["status"] = 409
    assert try_fast(["status", "wc"], env) is None
    supervisor["status"] = 200
    supervisor["headers"] = {}
    assert try_fast(["list"], env) is None  # not a Squall supervisor's answer
    assert try_fast(["kill", "wc"], env) is None and try_fast(["status", "wc", "--help"], env) is None
    (tmp_path / "squall.yaml").write_text("bootstrap.servers: k:9092\n")
    assert try_fast(["list"], env) is None  # a service file: typer's path reads it
    assert len(supervisor["paths"]) == asked + 6  # asked each time above, but not with a service file


def test_no_supervisor_means_the_topics_and_a_bad_form_means_typer() -> None:
    assert try_fast(["list"], {"SQUALL_HTTP_PORT": "1"}) is None
    assert parse(["errors", "wc", "a", "b"]) is None and parse(["list", "extra"]) is None and parse(["status"]) is None
    assert parse(["errors", "wc", "--limit=7"]) == ("errors", ["wc"], {"limit": "7"})


def test_something_else_on_the_port_means_typer() -> None:
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def answer() -> None:
        conn, _ = listener.accept()
        conn.recv(1024)
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        conn.close()

    threading.Thread(target=answer, daemon=True).start()
    try:
        assert try_fast(["list"], {"SQUALL_HTTP_PORT": str(listener.getsockname()[1])}) is None
    finally:
        listener.close()
