"""Storm's stat windows from sampled totals (a property over random histories), and the UI's token, sessions and CSRF checks."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.query.windows import SPACING, StatWindows
from service.ui.exceptions import ActionRefused
from service.ui.security import SESSION_S, Gate, check_csrf, cookies

STATIC = Path(__file__).resolve().parents[3] / "service" / "ui" / "static"


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.floats(1.0, 900.0), st.integers(0, 1000)), min_size=1, max_size=250), window=st.sampled_from([600.0, 10800.0, 86400.0]))
def test_a_windows_count_is_the_growth_since_a_kept_sample_no_older_than_the_window_plus_its_spacing(steps: list[tuple[float, int]], window: float) -> None:
    w = StatWindows()
    now, total = 0.0, 0.0
    history = [(0.0, 0.0)]
    w.record(0.0, {"c": {"emitted": 0.0}})
    for gap, grew in steps:
        now += gap
        total += grew
        w.record(now, {"c": {"emitted": total}})
        history.append((now, total))
    got = w.window(window, now, {"c": {"emitted": total}})
    at_since = max(t for at, t in history if at <= got.since)  # totals only grow: the total at "since"
    assert got.components["c"]["emitted"] == total - at_since
    assert got.since in [at for at, _ in history]
    if got.partial:
        assert got.since == w.samples[0][0] and now - got.since < window + max(s for _, s in SPACING)
    else:
        assert got.since <= now - window  # never shorter than the window
        spacing = next((s for below, s in SPACING if window < below), SPACING[-1][1])
        assert now - window - got.since <= max(spacing, max(g for g, _ in steps)) + SPACING[-1][1]  # and not much longer
    assert w.window(None, now, {"c": {"emitted": total}}).components["c"]["emitted"] == total
    assert len(w.samples) <= 120 + 180 + 144 + 3


def test_a_day_of_samples_every_two_seconds_keeps_a_few_hundred() -> None:
    w = StatWindows()
    for i in range(0, 2 * 86400, 2):
        w.record(float(i), {"c": {"emitted": float(i)}})
    assert 300 <= len(w.samples) <= 450
    day = w.window(86400.0, 2 * 86400 - 2.0, {"c": {"emitted": 2 * 86400 - 2.0}})
    assert not day.partial and 86400 <= day.components["c"]["emitted"] <= 86400 + 600


def test_sessions_expire_and_a_token_is_never_guessed_by_prefix() -> None:
    now = [0.0]
    gate = Gate("s3cret", clock=lambda: now[0])
    sid = gate.login("s3cret", "  ")
    assert gate.who(sid, "10.0.0.1") == "admin (ui, 10.0.0.1)"
    now[0] = SESSION_S + 1
    with pytest.raises(ActionRefused, match="log in"):
        gate.who(sid, "10.0.0.1")
    for guess in ("s3cre", "s3cret ", "", "S3CRET"):
        with pytest.raises(ActionRefused, match="wrong admin token"):
            gate.login(guess, "eve")
    assert not gate.bearer("Basic s3cret") and not gate.bearer(None) and gate.bearer("bearer s3cret")
    with pytest.raises(ActionRefused, match="actions are off"):
        Gate("").who(None, "10.0.0.1", bearer=True)


def test_csrf_needs_both_values_equal_and_this_origin() -> None:
    check_csrf("abc", "abc", "http://127.0.0.1:9470", "127.0.0.1:9470")
    check_csrf("abc", "abc", "null", "127.0.0.1:9470")  # a privacy-mode browser: the cookie check stands
    for cookie, form, origin in [(None, "abc", None), ("abc", None, None), ("abc", "abd", None), ("abc", "abc", "http://evil.example")]:
        with pytest.raises(ActionRefused):
            check_csrf(cookie, form, origin, "127.0.0.1:9470")
    assert cookies('bad"cookie; =; squall_csrf=x') in ({}, {"squall_csrf": "x"})


def test_the_vendored_scripts_are_the_ones_their_table_names_with_their_licences() -> None:
    table = (STATIC / "vendor" / "VENDORED.md").read_text()
    rows = re.findall(r"^\| `([^`]+\.js)` \|.*\| `([0-9a-f]{64})` \|$", table, flags=re.M)
    assert {name for name, _ in rows} == {p.name for p in (STATIC / "vendor").glob("*.js")}
    for name, digest in rows:
        assert hashlib.sha256((STATIC / "vendor" / name).read_bytes()).hexdigest() == digest, name
        assert (STATIC / "vendor" / name.replace(".min.js", ".LICENSE.txt")).is_file(), name
    templates = "".join(p.read_text() for p in (STATIC.parent / "templates").glob("*.html"))
    for src in re.findall(r'(?:src|href)="/static/([^"]+)"', templates):
        assert (STATIC / src).is_file(), src
    assert not re.search(r'(?:src=|rel="stylesheet" href=)"(?:https?:)?//', templates)  # no script or style from a CDN
