"""The reading verbs answered by a supervisor: ``GET /squall/v1/<verb>`` gives what ``squall <verb>`` prints, from the tails it keeps open.

A verb that reads the topics itself pays for a Python start-up with Kafka clients and a read of
four topics to their end (2-4 s); the local supervisor already holds those tails
(:class:`~service.query.live.LiveStatus`). So ``squall list``, ``status``, ``errors`` and
``dlq list`` first ask it (:mod:`service.cli.fast`), and print its answer:

* ``/squall/v1/list?json=1``
* ``/squall/v1/status/<name>?json=1``
* ``/squall/v1/errors/<name>?component=C&limit=N&traceback=1&json=1``
* ``/squall/v1/dlq/<name>?component=C&cause=X&limit=N``

The body is JSON: ``{"stdout": text, "stderr": text, "exit": code}``, the text
:mod:`service.query.views` renders (the same functions the CLI prints with). Every answer names
the supervisor's broker and control namespace in ``X-Squall-Bootstrap`` and
``X-Squall-Namespace``: the CLI uses an answer only when both match its own. A 409 means "ask
the topics yourself": a topology the tails do not know (it may be brand new, or never ran), or
more dead letters than the tail keeps. Before answering, the tails are read up to the broker's
high watermarks (:meth:`~service.query.live.LiveStatus.sync`), so a verb sees every write made
before it asked.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from service.exceptions import ControlError
from service.query.live import LiveStatus
from service.query.views import dlq_list_text, errors_text, list_lines, status_lines

PREFIX = "/squall/v1/"
BOOTSTRAP_HEADER = "X-Squall-Bootstrap"
NAMESPACE_HEADER = "X-Squall-Namespace"


def _flag(query: dict[str, str], key: str) -> bool:
    return query.get(key, "") in ("1", "true", "yes")


def _int(query: dict[str, str], key: str, default: int) -> int:
    raw = query.get(key, "")
    return int(raw) if raw.lstrip("-").isdigit() else default


class VerbsApi:
    """Answers ``/squall/v1/...`` from ``live`` (module docstring).

    Args:
      live: the supervisor's tails.
      bootstrap: the broker it reads (``X-Squall-Bootstrap``).
      namespace: its control namespace (``X-Squall-Namespace``).
    Thread-safe (LiveStatus locks).
    """

    def __init__(self, live: LiveStatus, bootstrap: str, namespace: str) -> None:
        self.live = live
        self.bootstrap = bootstrap
        self.namespace = namespace

    def headers(self) -> dict[str, str]:
        """The headers every answer carries."""
        return {BOOTSTRAP_HEADER: self.bootstrap, NAMESPACE_HEADER: self.namespace}

    def handle(self, path: str, query: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """``(HTTP status, body)`` for ``path`` (without the query string) and its query parameters."""
        parts = [urllib.parse.unquote(p) for p in path.removeprefix(PREFIX).split("/") if p]
        if parts == ["list"]:
            self.live.sync()
            return self._out(list_lines(self.live.rows(), _flag(query, "json")))
        if len(parts) != 2 or parts[0] not in ("status", "errors", "dlq"):
            return 404, {"error": f"no such verb path {path!r}"}
        verb, name = parts
        self.live.sync(name, {"status": ("control",), "errors": ("control", "errors"), "dlq": ("control", "dlq")}[verb])
        try:
            self.live.record(name)
        except ControlError:
            return 409, {"fallback": f"[{name}] not in this supervisor's control tail"}
        if verb == "status":
            return self._out(status_lines(self.live.status(name), _flag(query, "json")))
        if verb == "errors":
            component = query.get("component") or None
            reports = [r for r in self.live.error_reports(name) if component is None or r.component == component]
            return self._out(errors_text(name, reports, component, _int(query, "limit", 20), _flag(query, "traceback"), _flag(query, "json")))
        letters, total = self.live.dead_letters(name)
        if total > len(letters):
            return 409, {"fallback": f"[{name}] {total} dead letters, {len(letters)} kept in memory"}
        return self._out(dlq_list_text(name, letters, query.get("component") or None, query.get("cause") or None, _int(query, "limit", 20)))

    @staticmethod
    def _out(lines: list[str]) -> tuple[int, dict[str, Any]]:
        return 200, {"stdout": "".join(line + "\n" for line in lines), "stderr": "", "exit": 0}
