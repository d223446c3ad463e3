"""``squall logs``: each supervisor serves its own workers' logs; the CLI finds the supervisor from the events topic.

A supervisor answers ``GET /logs/<topology>/<worker>?offset=N`` with its log file of that
worker from byte ``N`` (negative: the last ``-N`` bytes), and the next offset in the
``X-Squall-Next-Offset`` header (:func:`read_log`). Its ``started`` events carry its HTTP
address (``http``), so ``squall logs`` asks the supervisor that started the worker last.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from service.exceptions import UsageError

LOG_PATH = re.compile(r"^/logs/(?P<topology>[A-Za-z0-9._-]+)/(?P<worker>\d+)$")
NEXT_OFFSET = "X-Squall-Next-Offset"


def log_file(logs_dir: Path, topology: str, worker: int) -> Path:
    """Where a supervisor writes worker ``worker`` of ``topology``'s output (:meth:`service.supervisor.daemon.Supervisor._start`)."""
    return logs_dir / f"{topology}-w{worker}.log"


def read_log(logs_dir: Path, path: str, offset: int) -> tuple[int, bytes, int]:
    """``(HTTP status, body, next offset)`` for ``/logs/<topology>/<worker>`` from byte ``offset`` (negative: the last bytes)."""
    m = LOG_PATH.match(path)
    if m is None:
        return 404, b"expected /logs/<topology>/<worker>\n", 0
    f = log_file(logs_dir, m["topology"], int(m["worker"]))
    if not f.is_file():
        return 404, f"no log of worker {m['worker']} of {m['topology']} on this supervisor\n".encode(), 0
    size = f.stat().st_size
    start = max(0, size + offset) if offset < 0 else min(offset, size)
    with open(f, "rb") as fh:
        fh.seek(start)
        body = fh.read(size - start)
    return 200, body, start + len(body)


def last_started(events: list[dict[str, Any]], worker: int | None) -> dict[int, dict[str, Any]]:
    """``worker -> its last started event`` (that names an HTTP address), of one worker or all."""
    out: dict[int, dict[str, Any]] = {}
    for e in events:
        if e.get("event") == "started" and e.get("http") and worker in (None, e.get("worker")):
            out[int(e["worker"])] = e
    return out


def fetch(http: str, topology: str, worker: int, offset: int) -> tuple[bytes, int]:
    """Bytes of a worker's log from its supervisor, and the next offset. Raises UsageError naming the supervisor if it does not answer."""
    url = f"http://{http}/logs/{topology}/{worker}?offset={offset}"
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read(), int(r.headers.get(NEXT_OFFSET, offset))
    except (urllib.error.URLError, OSError) as exc:
        raise UsageError(f"[{topology}] worker w{worker}: its supervisor at {http} does not answer ({exc})") from None
