"""The UI's routing, pages and actions without a broker: a stand-in LiveStatus, the control client's verbs recorded."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from service.ui import app as ui_app
from service.ui.app import Request, Response, UiApp, parse_form
from service.ui.security import Gate
from tests.unit.ui.fakes import NOW, FakeLive

TOKEN = "s3cret"


class Calls:
    def __init__(self) -> None:
        self.made: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.background: list[str] = []

    def record(self, verb: str) -> Callable[..., str]:
        def call(*args: Any, **kwargs: Any) -> str:
            self.made.append((verb, args[1:], kwargs))
            return f"{verb} done"

        return call


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    c = Calls()
    for verb in ("set_active", "set_debug_tracing", "set_log_level", "kill_topology", "rebalance_topology"):
        monkeypatch.setattr(ui_app, verb, c.record(verb))
    return c


def last(calls: Calls) -> Any:
    """The last verb called (Any: each assertion names its own shape)."""
    return calls.made[-1]


def make(calls: Calls, token: str | None = TOKEN) -> UiApp:
    def background(label: str, work: Callable[[], str]) -> None:
        calls.background.append(label)
        work()

    return UiApp(FakeLive(), object(), Gate(token, clock=lambda: NOW), "squall 9.9", clock=lambda: NOW, background=background)  # type: ignore[arg-type]


def get(app: UiApp, path: str, cookie: str = "", **query: str) -> Response:
    return app.handle(Request("GET", path, query, {"cookie": cookie, "host": "127.0.0.1:9470"}))


def post(app: UiApp, path: str, form: dict[str, str], cookie: str = "squall_csrf=c1", **headers: str) -> Response:
    return app.handle(Request("POST", path, {}, {"cookie": cookie, "host": "127.0.0.1:9470", **headers}, form, "10.0.0.5"))


def session(app: UiApp, name: str = "ann") -> str:
    resp = post(app, "/login", {"csrf": "c1", "token": TOKEN, "name": name})
    assert resp.status == 303
    sid = next(v for k, v in resp.headers if k == "Set-Cookie" and v.startswith("squall_session="))
    assert "HttpOnly" in sid and "SameSite=Strict" in sid
    return f"squall_csrf=c1; {sid.split(';')[0]}"


def test_every_page_renders_and_an_unknown_topology_component_or_tree_is_a_404_that_names_it(calls: Calls) -> None:
    app = make(calls)
    home = get(app, "/")
    assert home.status == 200 and b"s1" in home.body and b'href="/topology/wc"' in home.body and b"squall 9.9" in home.body
    topo = get(app, "/topology/wc")
    html = topo.body.decode()
    assert topo.status == 200 and 'id="graph-data"' in html and "fields(word)" in html
    assert html.count('<tr><td><a href="?window=') == 4  # Storm's four windows
    assert "component [count]" in html and "ann (ui, 127.0.0.1)" in html
    assert 'src="/static/vendor/dagre-3.1.3.min.js"' in html and "cdn" not in html.lower()
    live = get(app, "/topology/wc", part="live", window="600")
    assert live.status == 200 and live.body.startswith(b'<div id="live"') and b"Bolts (10m 0s)" in live.body
    comp = get(app, "/topology/wc/component/split").body.decode()
    assert "ValueError" in comp and "bad &lt;line&gt;" in comp and "http://127.0.0.1:9470/logs/wc/0" in comp
    assert "<tr><td>1</td><td>bolt-1</td><td>w0</td><td>squall.wc.lines[1]</td><td>4</td></tr>" in comp  # task 1 reads partition 1
    assert get(app, "/topology/wc/trace").status == 200
    tree = get(app, "/topology/wc/trace", root=f"{0xAB:016x}").body.decode()
    assert "tl-row" in tree and "held by" in tree and "[split]" in tree
    dlq = get(app, "/topology/wc/dlq").body.decode()
    assert "@7" in dlq and "split" in dlq and "(dead-lettered by lines)" in dlq
    shown = get(app, "/topology/wc/dlq", offset="7").body.decode()
    assert "line &lt;7&gt;" in shown
    for path, query, words in [
        ("/topology/nope", {}, "[nope] no such topology"),
        ("/topology/wc/component/nope", {}, "has no component 'nope' (it has count, lines, split)"),
        ("/topology/wc/trace", {"root": "00000000000000ff"}, "no sampled tree 00000000000000ff"),
        ("/topology/wc/dlq", {"offset": "99"}, "no dead letter @99"),
        ("/elsewhere", {}, "no page at '/elsewhere'"),
    ]:
        resp = get(app, path, **query)
        assert resp.status == 404 and words in resp.body.decode().replace("&#39;", "'"), (path, resp.body[:300])


def test_headers_cookies_and_static_files_never_leave_the_package(calls: Calls) -> None:
    app = make(calls)
    resp = get(app, "/")
    headers = dict(resp.headers)
    assert headers["X-Frame-Options"] == "DENY" and headers["Cache-Control"] == "no-store"
    assert re.match(r"squall_csrf=[\w-]{20,}; Path=/; SameSite=Strict$", headers["Set-Cookie"])
    assert "Set-Cookie" not in dict(get(app, "/", cookie="squall_csrf=c1").headers)  # kept
    css = get(app, "/static/squall.css")
    assert css.status == 200 and css.content_type.startswith("text/css")
    assert get(app, "/static/vendor/htmx-2.0.11.min.js").status == 200
    for bad in ("/static/../app.py", "/static/%2e%2e/app.py", "/static/templates/base.html", "/static/.hidden.js", "/static/app.py"):
        assert get(app, bad).status == 404, bad


def test_actions_are_refused_without_the_token_a_session_or_a_matching_csrf_and_are_taken_with_who(calls: Calls) -> None:
    off = make(calls, token=None)
    resp = post(off, "/topology/wc/action/deactivate", {"csrf": "c1"})
    assert resp.status == 403 and b"actions are off" in resp.body
    assert b"read-only" in get(off, "/topology/wc").body
    app = make(calls)
    assert post(app, "/topology/wc/action/deactivate", {"csrf": "c1"}).status == 403  # no session
    assert post(app, "/login", {"csrf": "c1", "token": "guess", "name": "eve"}).status == 403
    assert post(app, "/login", {"csrf": "other", "token": TOKEN}).status == 403  # the form's CSRF is not the cookie's
    assert post(app, "/login", {"token": TOKEN}, cookie="").status == 403  # no CSRF at all
    cookie = session(app)
    assert post(app, "/topology/wc/action/deactivate", {"csrf": "c1"}, cookie=cookie, origin="http://evil.example").status == 403
    assert post(app, "/topology/wc/action/deactivate", {"csrf": "zz"}, cookie=cookie).status == 403
    assert calls.made == []
    done = post(app, "/topology/wc/action/deactivate", {"csrf": "c1"}, cookie=cookie, origin="http://127.0.0.1:9470")
    assert done.status == 303 and dict(done.headers)["Location"] == "/topology/wc?msg=set_active%20done"
    assert last(calls) == ("set_active", ("wc", False, NOW), {"who": "ann (ui, 10.0.0.5)"})
    live = app.live
    assert isinstance(live, FakeLive) and live.own_writes == 1  # the redirect's page reads the record just written
    post(app, "/topology/wc/action/debug", {"csrf": "c1", "state": "on", "sampling_pct": "25"}, cookie=cookie)
    assert last(calls) == ("set_debug_tracing", ("wc", True, 25.0, NOW), {"who": "ann (ui, 10.0.0.5)"})
    assert live.own_writes == 2
    post(app, "/topology/wc/action/log_level", {"csrf": "c1", "logger": "squall.acker", "level": "debug", "seconds": "60"}, cookie=cookie)
    assert last(calls)[1] == ("wc", ["squall.acker=DEBUG:60"], [], NOW)
    post(app, "/topology/wc/action/kill", {"csrf": "c1", "wait": "5"}, cookie=cookie)
    assert last(calls) == ("kill_topology", ("wc", 5.0, NOW), {"who": "ann (ui, 10.0.0.5)"}) and calls.background == ["kill-wc"]
    post(app, "/topology/wc/action/rebalance", {"csrf": "c1", "workers": "3", "executors": "count=2, split=1"}, cookie=cookie)
    assert last(calls) == ("rebalance_topology", ("wc", 3, {"count": 2, "split": 1}, NOW), {"who": "ann (ui, 10.0.0.5)"})
    bad = post(app, "/topology/wc/action/rebalance", {"csrf": "c1", "executors": "count"}, cookie=cookie)
    assert bad.status == 303 and "refused" in dict(bad.headers)["Location"] and last(calls)[0] == "rebalance_topology" and len(calls.made) == 5
    bearer = post(app, "/topology/wc/action/activate", {}, cookie="", authorization=f"Bearer {TOKEN}")
    assert bearer.status == 303 and last(calls) == ("set_active", ("wc", True, NOW), {"who": "token (ui, 10.0.0.5)"})
    assert post(app, "/topology/nope/action/activate", {"csrf": "c1"}, cookie=cookie).status == 404
    assert post(app, "/topology/wc/action/explode", {"csrf": "c1"}, cookie=cookie).status == 404


def test_a_redirect_after_login_stays_on_this_server_and_logout_ends_the_session(calls: Calls) -> None:
    app = make(calls)
    resp = post(app, "/login", {"csrf": "c1", "token": TOKEN, "name": "ann", "next": "//evil.example/x"})
    assert dict(resp.headers)["Location"].startswith("/?msg=")
    cookie = session(app)
    assert b"acting as <strong>ann</strong>" in get(app, "/", cookie=cookie).body
    out = post(app, "/logout", {"csrf": "c1"}, cookie=cookie)
    assert out.status == 303 and ("Set-Cookie", "squall_session=; Path=/; Max-Age=0") in out.headers
    assert post(app, "/topology/wc/action/activate", {"csrf": "c1"}, cookie=cookie).status == 403


def test_what_a_user_typed_is_escaped_everywhere_it_is_shown(calls: Calls) -> None:
    app = make(calls)
    resp = get(app, "/topology/wc", msg="<script>alert(1)</script>")
    assert b"<script>alert(1)" not in resp.body and b"&lt;script&gt;alert(1)&lt;/script&gt;" in resp.body
    evil = get(app, "/topology/<img src=x>")
    assert evil.status == 404 and b"<img src=x>" not in evil.body


def test_a_form_body_keeps_every_chosen_dead_letter() -> None:
    assert parse_form(b"csrf=a&offset=3&offset=5") == {"csrf": "a", "offset": "3,5"}
    assert parse_form(b"name=a%26b&name=second") == {"name": "a&b"}


def test_the_topology_page_says_a_supervisor_is_unreachable_while_its_workers_are_silent(calls: Calls) -> None:
    app = make(calls)
    assert 'role="alert"' not in get(app, "/topology/wc", part="live", window="600").body.decode()
    live = FakeLive()
    live.st["unreachable"] = [{"supervisor": "h2", "workers": ["w1", "w3"], "silent_s": 7.4}]
    app.live = live  # type: ignore[assignment]
    html = get(app, "/topology/wc", part="live", window="600").body.decode()
    assert '<p class="error" role="alert" id="unreachable-1">Supervisor h2 unreachable: workers w1, w3 published no stats for 7 s' in html
