"""Who may act from the UI: the service's admin token, sessions, and CSRF protection.

Storm UI's actions (activate, deactivate, rebalance, kill, log levels, debug) change a running
topology, so Squall's are refused unless the request carries the admin token
(``SQUALL_UI_TOKEN``); with no token set, the actions are off and the pages read-only.

1. **Log in**: ``POST /login`` with the token (and a name for the audit trail) opens a
   session: a random id in an ``HttpOnly``, ``SameSite=Strict`` cookie, valid for
   :data:`SESSION_S`. Scripts may send ``Authorization: Bearer <token>`` instead.
2. **CSRF**: every page sets a random ``squall_csrf`` cookie (``SameSite=Strict``) and puts the
   same value in each form; a POST must carry both, equal (the double-submit pattern, OWASP's
   CSRF cheat sheet), and an ``Origin`` header, when sent, must be this server.
3. **Who**: the session's name, with ``ui`` and the client's address, goes into the control
   record with the action (:func:`service.control.record.audited`).

Tokens are compared in constant time (:func:`hmac.compare_digest`).

>>> gate = Gate("s3cret", clock=lambda: 100.0)
>>> gate.enabled, gate.bearer("Bearer s3cret"), gate.bearer("Bearer guess")
(True, True, False)
>>> sid = gate.login("s3cret", "ann")
>>> gate.who(sid, "127.0.0.1")
'ann (ui, 127.0.0.1)'
>>> Gate(None).enabled
False
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from http.cookies import SimpleCookie
from urllib.parse import urlsplit

from service.ui.exceptions import ActionRefused

SESSION_COOKIE = "squall_session"
CSRF_COOKIE = "squall_csrf"
SESSION_S = 12 * 3600.0
"""How long a UI session lasts (seconds)."""


def cookies(header: str | None) -> dict[str, str]:
    """The cookies of a ``Cookie`` header (a malformed one reads as none).

    >>> cookies("squall_csrf=abc; other=1")
    {'squall_csrf': 'abc', 'other': '1'}
    """
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header or "")
    except Exception:  # http.cookies raises CookieError, and worse on odd input
        return {}
    return {k: m.value for k, m in jar.items()}


def new_csrf() -> str:
    """A fresh CSRF value (32 random bytes, URL-safe)."""
    return secrets.token_urlsafe(32)


def check_csrf(cookie: str | None, form: str | None, origin: str | None, host: str | None) -> None:
    """Raise ActionRefused unless the form's CSRF value equals the cookie's and ``Origin`` (if sent) is ``host``.

    >>> check_csrf("a", "a", None, "127.0.0.1:9470")
    >>> check_csrf("a", "b", None, "127.0.0.1:9470")
    Traceback (most recent call last):
    ...
    service.ui.exceptions.ActionRefused: the form's CSRF token does not match this browser's (reload the page and try again)
    """
    if not cookie or not form or not hmac.compare_digest(cookie, form):
        raise ActionRefused("the form's CSRF token does not match this browser's (reload the page and try again)")
    if origin and origin != "null" and urlsplit(origin).netloc != (host or ""):
        raise ActionRefused(f"the request comes from {origin}, not from this server ({host})")


class Gate:
    """The admin token and the sessions opened with it (module docstring). Thread-safe.

    Args:
      token: ``SQUALL_UI_TOKEN``; None or empty: actions are off.
      clock: wall-clock seconds (session expiry).
    """

    def __init__(self, token: str | None, clock: Callable[[], float] = time.time) -> None:
        self.token = token or None
        self.clock = clock
        self.sessions: dict[str, tuple[str, float]] = {}
        """``session id -> (name, expires at)``."""
        self.lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether actions are on (a token is set)."""
        return self.token is not None

    def _matches(self, given: str) -> bool:
        return self.token is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def bearer(self, authorization: str | None) -> bool:
        """Whether an ``Authorization: Bearer <token>`` header carries the token."""
        scheme, _, given = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and self._matches(given.strip())

    def login(self, given: str, name: str) -> str:
        """A new session id for ``name``. Raises ActionRefused when actions are off or the token is wrong."""
        if self.token is None:
            raise ActionRefused("actions are off: the service has no SQUALL_UI_TOKEN")
        if not self._matches(given):
            raise ActionRefused("wrong admin token")
        sid = secrets.token_urlsafe(32)
        now = self.clock()
        with self.lock:
            self.sessions = {k: v for k, v in self.sessions.items() if v[1] > now}
            self.sessions[sid] = ((name.strip() or "admin")[:64], now + SESSION_S)
        return sid

    def logout(self, sid: str | None) -> None:
        """End session ``sid`` (if any)."""
        with self.lock:
            self.sessions.pop(sid or "", None)

    def name(self, sid: str | None) -> str | None:
        """The name of live session ``sid``, else None."""
        with self.lock:
            got = self.sessions.get(sid or "")
        return got[0] if got is not None and got[1] > self.clock() else None

    def who(self, sid: str | None, peer: str, bearer: bool = False) -> str:
        """The action's author for the audit trail. Raises ActionRefused without a live session or the bearer token."""
        if self.token is None:
            raise ActionRefused("actions are off: the service has no SQUALL_UI_TOKEN (the pages are read-only)")
        if bearer:
            return f"token (ui, {peer})"
        name = self.name(sid)
        if name is None:
            raise ActionRefused("log in with the admin token first (SQUALL_UI_TOKEN)")
        return f"{name} (ui, {peer})"
