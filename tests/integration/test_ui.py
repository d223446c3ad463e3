"""The Squall UI in a real browser (Debian's chromium, driven by Playwright): a live supervisor runs a
topology that raises on some tuples and sleeps past the message timeout on others (topologies/why.py).

Every page opens; the graph links to a component, its errors and a trace; a deactivate with the
admin token changes the status in the control topic (with who did it), and one without it is
refused; a dead letter replays; axe-core finds no serious or critical violation on any page.
With ``SQUALL_UI_SCREENSHOTS=DIR`` the topology, component and trace pages are saved there
(``docs/img/`` holds the README's).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from service.control.log import ControlLog, ControlTopics
from tests.integration.conftest import TOPOLOGIES
from tests.integration.service_harness import Cluster
from tests.integration.topologies.why import fails

pytestmark = pytest.mark.broker

AXE = Path(__file__).resolve().parent / "axe" / "axe-4.14.1.min.js"
TOKEN = f"ui-{uuid.uuid4().hex}"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's ``browser`` launches Debian's chromium (``.ci/run`` installs it): Playwright's own browser download cannot reach its CDN here."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "chromium is not installed (apt-get install chromium; .ci/run does)"
    return {**browser_type_launch_args, "executable_path": path, "args": ["--no-sandbox", "--disable-dev-shm-usage"]}


def axe(page: Page) -> dict[str, Any]:
    """axe-core's violations on the page as it is: ``{"serious": [...ids], "all": n}`` (impact serious or critical)."""
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    violations = result["violations"]
    serious = [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}" for v in violations if v["impact"] in ("serious", "critical")
    ]
    return {"serious": serious, "all": len(violations), "ids": sorted({v["id"] for v in violations})}


def wait_page(page: Page, url: str, pattern: str, timeout_s: float = 120.0) -> None:
    """Reload ``url`` until its text matches ``pattern`` (the supervisor reads the topics every 2 s)."""
    deadline = time.monotonic() + timeout_s
    while True:
        page.goto(url)
        if re.search(pattern, page.content()):
            return
        assert time.monotonic() < deadline, f"{url} never showed {pattern!r}:\n{page.inner_text('main')[:2000]}"
        time.sleep(1.0)


def test_every_page_in_chromium_links_acts_with_the_token_refuses_without_it_replays_and_passes_axe(
    cluster: Cluster, browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SQUALL_UI_TOKEN", TOKEN)
    cluster.serve("s1")
    base = f"http://127.0.0.1:{cluster.serves['s1'][1]}"
    name = f"ui{uuid.uuid4().hex[:6]}"
    cluster.squall("submit", str(TOPOLOGIES / "why.py"), "--name", name)
    cluster.wait_ready(["s1"], 2)
    lines = [f"line {i} of plain words" for i in range(160)]
    bad = [line for line in lines if fails(line)]
    assert len(bad) >= 2  # parse raises on these on every delivery: dead-lettered after the retries
    lines[20] = "zzz sleeps here"  # slow sleeps past the message timeout: trees time out, and replay
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n")
    assert cluster.feed(f"squall.{name}.lines", src, seconds=0.5, partitions=1).wait(120) == 0

    shots = Path(os.environ["SQUALL_UI_SCREENSHOTS"]) if os.environ.get("SQUALL_UI_SCREENSHOTS") else tmp_path
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    report: dict[str, Any] = {}

    # 1. The dead letters and a timed-out tree reach the pages.
    wait_page(page, f"{base}/topology/{name}/dlq", r"name=\"offset\"[^>]*value=\"\d+\"[\s\S]*name=\"offset\"", timeout_s=180)
    wait_page(page, f"{base}/topology/{name}/trace", r"held by \[", timeout_s=120)

    # 1b. The reading verbs answered by this supervisor print what they print reading the topics themselves.
    port = str(cluster.serves["s1"][1])
    fast = "import sys; from service.cli.fast import try_fast; code = try_fast(sys.argv[1:]); sys.exit(99 if code is None else code)"
    for verb in (["list"], ["errors", name, "parse", "-n", "50"], ["dlq", name, "list", "-c", "parse"], ["dlq", name, "list", "--cause", "timeout"]):
        alone = cluster.squall(*verb, env=cluster.env(SQUALL_HTTP_PORT="1"))  # no supervisor there: the topics
        answered = subprocess.run([sys.executable, "-c", fast, *verb], capture_output=True, text=True, env=cluster.env(SQUALL_HTTP_PORT=port), timeout=60)
        assert answered.returncode == 0, (verb, answered.stderr)  # 99: it fell back
        assert re.sub(r"\s+\d+s ", " Ns ", answered.stdout) == re.sub(r"\s+\d+s ", " Ns ", alone.stdout), verb  # uptimes aside
    shown = subprocess.run([sys.executable, "-c", fast, "status", name], capture_output=True, text=True, env=cluster.env(SQUALL_HTTP_PORT=port), timeout=60)
    assert shown.returncode == 0 and shown.stdout.startswith(f"{name}  ACTIVE") and "parse" in shown.stdout
    other = subprocess.run(
        [sys.executable, "-c", fast, "list"], capture_output=True, text=True, env=cluster.env(SQUALL_HTTP_PORT=port, SQUALL_CONTROL_NAMESPACE="x")
    )
    assert other.returncode == 99  # another namespace's verb never takes this supervisor's answer

    # 2. The cluster page: this supervisor and the topology, which links to its page.
    page.goto(base + "/")
    expect(page.locator("table").first).to_contain_text("s1")
    report["/"] = axe(page)
    page.get_by_role("link", name=name, exact=True).click()
    expect(page).to_have_url(f"{base}/topology/{name}")

    # 3. The topology page: summary, Storm's four windows, the graph (drawn by dagre), lag, configuration with sources.
    expect(page.locator("#topology-status")).to_have_text("ACTIVE")
    for window in ("10m 0s", "3h 0m 0s", "1d 0h 0m 0s", "All time"):
        expect(page.locator("#stats-h + table")).to_contain_text(window)
    expect(page.locator("#graph")).to_have_attribute("data-drawn", "4")
    for comp in ("lines", "parse", "slow", "count"):
        expect(page.locator(f'#graph a[data-component="{comp}"]')).to_have_count(1)
    expect(page.locator("#graph .edge text").first).to_contain_text("/s")
    expect(page.locator("#conf-h + table")).to_contain_text("topology.message.timeout.secs")
    expect(page.locator("#conf-h + table")).to_contain_text("topology")  # a key's source
    expect(page.locator("#lag-h + table")).to_contain_text(f"squall.{name}.lines[0]")
    expect(page.locator("#graph a[data-component='parse']")).to_have_class(re.compile(r"state-error"))  # it raised in the last 10 min
    report["topology"] = axe(page)
    page.screenshot(path=str(shots / "ui-topology.png"), full_page=True)

    # 4. From the graph to a component: its executors, tasks, log link, and errors with tracebacks.
    page.locator("#graph a[data-component='parse']").click()
    expect(page).to_have_url(f"{base}/topology/{name}/component/parse")
    expect(page.locator("#exec-h + table tbody tr")).to_have_count(1)
    expect(page.locator("a.log-link").first).to_have_attribute("href", re.compile(rf"/logs/{name}/\d+$"))
    expect(page.locator("article.report").first).to_contain_text("ValueError")
    page.locator("article.report details summary").first.click()
    expect(page.locator("article.report pre").first).to_contain_text("Traceback")
    log_href = page.locator("a.log-link").first.get_attribute("href")
    assert log_href is not None
    worker_log = page.request.get(log_href)
    assert worker_log.ok and f"[{name}]" in worker_log.text()
    report["component"] = axe(page)
    page.screenshot(path=str(shots / "ui-component.png"), full_page=True)

    # 5. The trace: timed-out trees grouped by the component that held them (the holder first), then one tree's timeline.
    page.get_by_role("link", name="Trace", exact=True).click()
    first = page.locator("h3.holder-name").first
    expect(first).to_contain_text("[slow]")
    report["trace"] = axe(page)
    page.locator("article.holder ul.roots a").first.click()
    expect(page.locator("tr.tl-row")).not_to_have_count(0)
    expect(page.locator("tr.tl-row th").first).to_have_text("lines")
    expect(page.locator("main")).to_contain_text("timed out")
    report["tree"] = axe(page)
    page.screenshot(path=str(shots / "ui-trace.png"), full_page=True)

    # 6. Actions: refused without the token; with it, deactivate changes the control record, with who and when.
    csrf = next(c["value"] for c in context.cookies() if c["name"] == "squall_csrf")
    refused = page.request.post(f"{base}/topology/{name}/action/deactivate", form={"csrf": csrf})
    assert refused.status == 403 and "log in" in refused.text()
    wrong = page.request.post(f"{base}/login", form={"csrf": csrf, "token": "guess", "name": "eve"})
    assert wrong.status == 403 and "wrong admin token" in wrong.text()
    forged = page.request.post(f"{base}/topology/{name}/action/deactivate", form={"csrf": "forged"}, headers={"Authorization": "Bearer guess"})
    assert forged.status == 403
    page.goto(f"{base}/topology/{name}")
    expect(page.locator("#deactivate")).to_have_count(0)  # no buttons before logging in
    page.fill("#login-name", "ann")
    page.fill("#login-token", TOKEN)
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{base}/topology/{name}")
    page.locator("#deactivate").click()
    expect(page.locator("p.flash")).to_contain_text(f"deactivated {name}")
    expect(page.locator("#topology-status")).to_have_text("INACTIVE")
    expect(page.locator("tr.action-row").first).to_contain_text("ann (ui, 127.0.0.1)")
    control = ControlLog(cluster.bootstrap, ControlTopics(cluster.namespace))
    try:
        control.catch_up(30)
        rec = control.records[name]
    finally:
        control.close()
    assert rec.status.value == "INACTIVE"
    assert rec.actions[-1]["action"] == "deactivate" and rec.actions[-1]["who"] == "ann (ui, 127.0.0.1)" and rec.actions[-1]["at"] > time.time() - 120

    # 7. Dead letters: the list names the bolt that failed each record; one shows its traceback; one replays.
    page.get_by_role("link", name="Dead letters", exact=True).click()
    rows = page.locator("main table tbody tr")
    expect(rows.first).to_contain_text("parse")
    report["dlq"] = axe(page)
    page.locator("main table tbody tr a").first.click()
    expect(page.locator("main")).to_contain_text("ValueError")
    report["dead letter"] = axe(page)
    page.go_back()
    letter_value = page.locator("input[name=offset]").first.get_attribute("value")
    page.locator("input[name=offset]").first.check()
    page.locator("#replay").click()
    expect(page.locator("p.flash")).to_contain_text("replayed 1 dead letters")
    expect(page.locator("p.flash")).to_contain_text(f"squall.{name}.lines: 1")
    assert letter_value is not None

    (tmp_path / "axe.json").write_text(json.dumps(report, indent=2))
    print("axe:", json.dumps({page_name: {"serious": len(r["serious"]), "all": r["all"], "ids": r["ids"]} for page_name, r in report.items()}))
    assert all(not r["serious"] for r in report.values()), {k: r["serious"] for k, r in report.items() if r["serious"]}
    assert not errors, errors
    context.close()
