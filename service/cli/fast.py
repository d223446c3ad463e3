"""The ``squall`` entry point: the reading verbs answered by the local supervisor in a fraction of a second, everything else by typer.

``squall list``, ``status``, ``errors`` and ``dlq NAME list`` read four topics to their end
when they run alone (2-4 s with the Python start-up of typer, pydantic and the Kafka client). A
supervisor on this machine keeps those topics' tails open and answers the same text at
``/squall/v1/...`` (:mod:`service.supervisor.verbs_api`). This module imports only the standard
library, so the fast path costs the interpreter's start-up plus one local HTTP request:

1. **Parse**: the arguments must be one of those verbs' exact forms (below); any other word,
   ``--help`` or ``--verbose`` goes to typer (:mod:`service.cli.main`), which checks them.
2. **Whose broker**: ``--bootstrap-servers``, else ``SQUALL_BOOTSTRAP_SERVERS``, else 127.0.0.1:9092
   (with a service file, ``SQUALL_CONFIG`` or ``./squall.yaml``, typer's path reads it instead);
   the namespace is ``SQUALL_CONTROL_NAMESPACE`` (``squall``).
3. **Ask**: ``SQUALL_HTTP_HOST:SQUALL_HTTP_PORT`` (127.0.0.1:9470), within :data:`TIMEOUT_S`.
4. **Trust**: only an answer whose ``X-Squall-Bootstrap`` and ``X-Squall-Namespace`` name the same
   broker and namespace; print it and exit with its code. Anything else (no supervisor, another
   broker, a 409, a timeout) falls back to typer, which reads the topics itself.

Forms: ``list [--json]``; ``status NAME [--json]``; ``errors NAME [COMPONENT] [-n N]
[--traceback] [--json]``; ``dlq NAME list [-c C] [--cause X] [-n N]``; each also
``[--bootstrap-servers B]``.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.parse
from pathlib import Path

TIMEOUT_S = 3.0
"""How long the local supervisor may take to answer before the verb reads the topics itself (seconds)."""

FLAGS = {"--json": "json", "--traceback": "traceback"}
VALUED = {"--bootstrap-servers": "bootstrap", "-n": "limit", "--limit": "limit", "-c": "component", "--component": "component", "--cause": "cause"}
ALLOWED = {
    "list": ({"json", "bootstrap"}, 0, 0),
    "status": ({"json", "bootstrap"}, 1, 1),
    "errors": ({"json", "traceback", "limit", "bootstrap"}, 1, 2),
    "dlq": ({"component", "cause", "limit", "bootstrap"}, 2, 2),
}
"""verb -> (options it takes, fewest and most positional arguments)."""


def parse(argv: list[str]) -> tuple[str, list[str], dict[str, str]] | None:
    """``(verb, positional arguments, options)`` when ``argv`` is one of the fast forms, else None.

    >>> parse(["status", "wc", "--json"])
    ('status', ['wc'], {'json': '1'})
    >>> parse(["dlq", "wc", "list", "-c", "split", "--bootstrap-servers=k:9092"])
    ('dlq', ['wc', 'list'], {'component': 'split', 'bootstrap': 'k:9092'})
    >>> parse(["dlq", "wc", "show", "7"]), parse(["status", "wc", "--help"]), parse(["-v", "list"]), parse(["errors", "wc", "-n", "x"])
    (None, None, None, None)
    """
    if not argv or argv[0] not in ALLOWED:
        return None
    verb, rest = argv[0], argv[1:]
    takes, fewest, most = ALLOWED[verb]
    args: list[str] = []
    opts: dict[str, str] = {}
    i = 0
    while i < len(rest):
        word = rest[i]
        name, eq, value = word.partition("=")
        if word in FLAGS:
            opts[FLAGS[word]] = "1"
        elif name in VALUED and eq:
            opts[VALUED[name]] = value
        elif word in VALUED and i + 1 < len(rest):
            opts[VALUED[word]] = rest[i + 1]
            i += 1
        elif word.startswith("-"):
            return None
        else:
            args.append(word)
        i += 1
    if not fewest <= len(args) <= most or not set(opts) <= takes:
        return None
    if verb == "dlq" and args[1] != "list":
        return None
    if "limit" in opts and not opts["limit"].isdigit():
        return None
    return verb, args, opts


def request_path(verb: str, args: list[str], opts: dict[str, str]) -> str:
    """The ``/squall/v1/...`` path and query for a parsed verb.

    >>> request_path("errors", ["wc", "split"], {"limit": "5", "json": "1"})
    '/squall/v1/errors/wc?component=split&limit=5&json=1'
    """
    query = {k: v for k, v in opts.items() if k != "bootstrap"}
    if verb == "errors" and len(args) == 2:
        query = {"component": args[1], **query}
    path = "/squall/v1/list" if verb == "list" else f"/squall/v1/{verb}/{urllib.parse.quote(args[0], safe='')}"
    return path + ("?" + urllib.parse.urlencode(query) if query else "")


def same_servers(a: str, b: str) -> bool:
    """Whether two ``bootstrap.servers`` lists name the same brokers (order, case and ``localhost`` aside).

    >>> same_servers("localhost:9092, k2:9093", "K2:9093,127.0.0.1:9092"), same_servers("k:9092", "k:9093")
    (True, False)
    """

    def norm(servers: str) -> set[str]:
        return {s.strip().lower().replace("localhost:", "127.0.0.1:") for s in servers.split(",") if s.strip()}

    return norm(a) == norm(b)


def http_get(host: str, port: int, path: str, timeout_s: float) -> tuple[int, dict[str, str], bytes]:
    """``(status, lower-case headers, body)`` of an HTTP/1.0 GET: the supervisor's server answers HTTP/1.0 and closes.

    A few lines over a socket instead of :mod:`http.client`, whose imports (the ``email``
    package) cost about 30 ms of a verb's start-up. Raises OSError (no server, a timeout) or
    ValueError (not an HTTP answer).
    """
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    head, sep, body = b"".join(chunks).partition(b"\r\n\r\n")
    if not sep:
        raise ValueError("no end of the headers")
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/"):
        raise ValueError(f"not an HTTP answer: {lines[0][:40]!r}")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(rest.split(" ", 1)[0]), headers, body


def try_fast(argv: list[str], environ: dict[str, str] | None = None) -> int | None:
    """Run a reading verb through the local supervisor: its exit code, or None to run it with typer (module docstring, steps 1-4)."""
    env = dict(os.environ) if environ is None else environ
    # 1. Parse.
    parsed = parse(argv)
    if parsed is None:
        return None
    verb, args, opts = parsed
    # 2. Whose broker.
    bootstrap = opts.get("bootstrap") or env.get("SQUALL_BOOTSTRAP_SERVERS")
    if not bootstrap:
        if env.get("SQUALL_CONFIG") or Path("squall.yaml").exists():
            return None
        bootstrap = "127.0.0.1:9092"
    namespace = env.get("SQUALL_CONTROL_NAMESPACE") or "squall"
    host = env.get("SQUALL_HTTP_HOST") or "127.0.0.1"
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    port = env.get("SQUALL_HTTP_PORT") or "9470"
    if not port.isdigit() or port == "0":
        return None
    # 3. Ask.
    try:
        status, headers, raw = http_get(host, int(port), request_path(verb, args, opts), TIMEOUT_S)
    except (OSError, ValueError):
        return None
    # 4. Trust.
    if status != 200 or not same_servers(headers.get("x-squall-bootstrap", ""), bootstrap) or headers.get("x-squall-namespace") != namespace:
        return None
    try:
        body = json.loads(raw)
        out, err, code = str(body["stdout"]), str(body.get("stderr", "")), int(body["exit"])
    except (ValueError, KeyError, TypeError):
        return None
    sys.stdout.write(out)
    sys.stderr.write(err)
    sys.stdout.flush()
    return code


def main() -> None:
    """The ``squall`` command: a reading verb through the local supervisor if it answers (:func:`try_fast`), else typer's verbs."""
    code = try_fast(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from service.cli.main import main as typer_main

    typer_main()


if __name__ == "__main__":
    main()
