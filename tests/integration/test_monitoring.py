"""Monitoring against a real Prometheus (issue 14): it scrapes a ``squall serve`` supervisor
running the exactly-once word count and the workers of a ``squall run`` job (the word count
with a SparkBolt); then every Grafana query, with its template variables filled in, returns
data, and the complete latency quantiles agree with what ``squall run`` prints. The alert
rules pass ``promtool test rules``.

Prometheus comes from Debian's ``prometheus`` package: on PATH, or unpacked once into the
cache (``apt-get download prometheus`` + ``dpkg -x``), or the test fails saying how to get it.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.config import ServiceSettings
from service.run.runner import Job
from service.worker.metrics import BUCKETS
from tests.integration.conftest import CACHE, EXAMPLES, corpus_slice, free_port_block
from tests.integration.service_harness import EXACTLY_ONCE, Cluster

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs"))
from render_panels import render

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "grafana"
RULES = ROOT / "deploy" / "prometheus"
HOW = "install it with `apt-get install prometheus` (Debian 12: 2.42), or let the test unpack it: `apt-get download prometheus` must work"


def _unpacked(name: str) -> Path | None:
    found = shutil.which(name)
    if found:
        return Path(found)
    cached = CACHE / "prometheus" / "usr" / "bin" / name
    if cached.exists():
        return cached
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        return None
    dl = CACHE / "prometheus-deb"
    dl.mkdir(parents=True, exist_ok=True)
    got = subprocess.run(["apt-get", "download", "prometheus"], cwd=dl, capture_output=True, text=True)
    debs = sorted(dl.glob("prometheus_*.deb"))
    if got.returncode != 0 or not debs:
        return None
    subprocess.run(["dpkg", "-x", str(debs[-1]), str(CACHE / "prometheus")], check=True)
    return cached if cached.exists() else None


@pytest.fixture(scope="module")
def binaries() -> dict[str, Path]:
    out = {n: _unpacked(n) for n in ("prometheus", "promtool")}
    missing = [n for n, p in out.items() if p is None]
    if missing:
        pytest.fail(f"no {' or '.join(missing)} binary found: {HOW}")
    return {n: p for n, p in out.items() if p is not None}


def test_alert_rules_pass_promtool(binaries: dict[str, Path]) -> None:
    check = subprocess.run([str(binaries["promtool"]), "check", "rules", "squall-alerts.yaml"], cwd=RULES, capture_output=True, text=True)
    rules = (RULES / "squall-alerts.yaml").read_text().count("- alert: ")
    assert rules == 12  # SquallSupervisorCutOff is the twelfth (issue 52)
    assert check.returncode == 0 and f"SUCCESS: {rules} rules found" in check.stdout, check.stdout + check.stderr
    tested = (RULES / "squall-alerts.test.yaml").read_text()
    untested = [a for a in re.findall(r"- alert: (\w+)", (RULES / "squall-alerts.yaml").read_text()) if f"alertname: {a}" not in tested]
    assert not untested, f"alerts without a promtool test: {untested}"
    test = subprocess.run([str(binaries["promtool"]), "test", "rules", "squall-alerts.test.yaml"], cwd=RULES, capture_output=True, text=True)
    print(test.stdout)
    assert test.returncode == 0 and "SUCCESS" in test.stdout, test.stdout + test.stderr


class Prometheus:
    """A throw-away Prometheus on 127.0.0.1 scraping ``targets`` every second."""

    def __init__(self, binary: Path, home: Path, targets: list[str]) -> None:
        self.port = free_port_block(1)
        config = home / "prometheus.yml"
        scrape = [{"job_name": "squall", "static_configs": [{"targets": targets}]}]
        config.write_text(json.dumps({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "scrape_configs": scrape}))
        self.proc = subprocess.Popen(
            [str(binary), f"--config.file={config}", f"--storage.tsdb.path={home / 'tsdb'}", f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=(home / "prometheus.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                self.get("/-/ready")
                return
            except OSError:
                assert time.monotonic() < deadline, (home / "prometheus.log").read_text()[-2000:]
                time.sleep(0.1)

    def get(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(url, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body.startswith(b"{") else body

    def query(self, expr: str) -> list[dict[str, Any]]:
        got = self.get("/api/v1/query", query=expr)
        assert got["status"] == "success", (expr, got)
        result: list[dict[str, Any]] = got["data"]["result"]
        return result

    def label_values(self, label: str, match: str) -> list[str]:
        got = self.get(f"/api/v1/label/{label}/values", **{"match[]": match})
        values: list[str] = got["data"]
        return values

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def resolve_variables(prom: Prometheus, dashboard: dict[str, Any]) -> dict[str, list[str]]:
    """Every query variable's values, in order (a later one may use an earlier one): Grafana's
    ``label_values(metric{...}, label)`` through Prometheus' label API."""
    values: dict[str, list[str]] = {}
    for var in dashboard["templating"]["list"]:
        if var["type"] != "query":
            continue
        query = fill(var["query"], values)
        inner = query[len("label_values(") : -1]
        match, _, label = inner.rpartition(",")
        got = prom.label_values(label.strip(), match.strip())
        assert got, f"variable {var['name']}: {query} resolves to nothing"
        values[var["name"]] = got
    return values


def fill(expr: str, values: dict[str, list[str]]) -> str:
    """Grafana's substitution for multi-value variables used in ``=~``: ``(a|b|c)``."""
    for name, vals in sorted(values.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(f"${name}", "(" + "|".join(vals) + ")" if len(vals) > 1 else vals[0])
    return expr


def panels_with_values(dashboard: dict[str, Any], values: dict[str, list[str]]) -> Iterator[tuple[str, list[str]]]:
    """``(title, exprs)`` of every panel, once per value of its row's repeat variable."""
    repeat: str | None = None
    for p in dashboard["panels"]:
        if p["type"] == "row":
            repeat = p.get("repeat")
            continue
        exprs = [t["expr"] for t in p.get("targets", [])]
        if repeat is None:
            yield p["title"], [fill(e, values) for e in exprs]
        else:
            for v in values[repeat]:
                one = {**values, repeat: [v]}
                yield fill(p["title"], one), [fill(e, one) for e in exprs]


def finite(series: list[dict[str, Any]]) -> bool:
    return any(not math.isnan(float(s["value"][1])) for s in series)


def bucket_of(value: float) -> tuple[float, float]:
    lower = 0.0
    for b in BUCKETS:
        if value <= b:
            return lower, b
        lower = b
    return lower, math.inf


def test_every_dashboard_query_returns_data_and_quantiles_match_squall_run(binaries: dict[str, Path], bootstrap: str, corpus: Path, tmp_path: Path) -> None:
    cluster = Cluster(bootstrap, tmp_path)
    prom: Prometheus | None = None
    job: Job | None = None
    try:
        # a supervisor running the exactly-once word count, fed by a separate producer
        http = cluster.serve("s1")
        eo = f"eo{uuid.uuid4().hex[:6]}"
        cluster.squall("submit", str(EXACTLY_ONCE), "--name", eo)
        cluster.wait_ready(["s1"], 3)
        # a `squall run` job whose workers serve /metrics themselves (split is a SparkBolt)
        metrics_port = free_port_block(16)
        settings = ServiceSettings(bootstrap_servers=bootstrap, data_dir=tmp_path / "run", metrics_port=metrics_port)
        job = Job(EXAMPLES / "wordcount_spark.py", corpus_slice(corpus, tmp_path / "in.txt", 3_000), tmp_path / "counts.json", settings)
        job.start(produce_input=False)
        assert job.cluster is not None
        targets = [f"127.0.0.1:{http}"] + [f"127.0.0.1:{metrics_port + i}" for i in range(len(job.cluster.workers))]
        prom = Prometheus(binaries["prometheus"], tmp_path, targets)
        # fed while Prometheus scrapes: the batch panels' rates need samples before and after.
        # Over 20 s: fed in 5 s, the exactly-once word count finished every batch between two of
        # its stats' publications, and the batch histograms never rose between two scrapes (NaN).
        cluster.feed(f"squall.{eo}.lines", corpus_slice(corpus, tmp_path / "eo.txt", 5_000), seconds=20)
        job.wait_ready(180)
        job.produce_input()
        deadline = time.monotonic() + 300
        while not (job.done() and sum(cluster.committed(eo)) >= 5_000):
            assert time.monotonic() < deadline, "the topologies did not finish"
            assert job.board is not None
            job.board.poll(0.5)
        time.sleep(4)  # a few more scrapes, so every counter has two samples

        up = prom.query("up")
        assert len(up) == len(targets) and all(s["value"][1] == "1" for s in up), up
        report: list[str] = []
        for path in sorted(GRAFANA.glob("*.json")):
            dashboard = json.loads(path.read_text())
            values = resolve_variables(prom, dashboard)
            report.append(f"{path.name}: variables {values}")
            for title, exprs in panels_with_values(dashboard, values):
                results = [prom.query(e) for e in exprs]
                for e, r in zip(exprs, results, strict=True):
                    assert r, f"{path.name} / {title}: no series for {e}"
                    report.append(f"  {len(r):3d} series  {title}: {e}")
                assert any(finite(r) for r in results), f"{path.name} / {title}: every series is NaN"

        # complete latency: Prometheus' histogram_quantile over the job's buckets vs the summary
        name = job.name
        quantiles = {}
        for q in (0.5, 0.99):
            (series,) = prom.query(f'histogram_quantile({q}, sum by (le) (squall_complete_latency_seconds_bucket{{topology="{name}",kind="spout"}}))')
            quantiles[q] = float(series["value"][1])
        summary = job.wait(60)
        printed = {0.5: summary.complete_latency_p50_s, 0.99: summary.complete_latency_p99_s}
        for q, got in quantiles.items():
            # the printed value is a 5%-wide bin's midpoint, so its own bin may straddle a
            # Prometheus bound: accept the buckets either side of it
            lower, upper = bucket_of(printed[q] / 1.05)[0], bucket_of(printed[q] * 1.05)[1]
            report.append(f"complete latency p{round(q * 100)}: squall run printed {printed[q]:.4f} s, Prometheus {got:.4f} s (buckets {lower}..{upper} s)")
            assert lower <= got <= upper, report[-1]
        picture = render(f"http://127.0.0.1:{prom.port}", f"({eo}|{name})", 2.0, "monitoring test", tmp_path / "panels.png")
        assert picture.stat().st_size > 10_000  # the README's picture renders from the same data
        print("\n".join(report))
    finally:
        if job is not None:
            job.close()
        if prom is not None:
            prom.close()
        cluster.close()
        shutil.rmtree(tmp_path / "tsdb", ignore_errors=True)


def test_the_board_reads_to_now_while_executors_keep_publishing(bootstrap: str) -> None:
    """``squall status`` read the stats until a quiet moment, which a running topology never
    gives (14-25 s; issue 25). Reading to the ends as of the call finishes while snapshots
    keep coming, and sees every snapshot written before it."""
    import threading

    from service.brokers.admin import ensure_topics
    from streams.kafka.clients import new_producer
    from streams.monitoring.board import StatsBoard
    from streams.monitoring.stats import ExecutorStats
    from streams.wire.codec import encode_json
    from streams.wire.naming import metrics_topic

    name = f"t{uuid.uuid4().hex[:8]}"
    ensure_topics(bootstrap, {metrics_topic(name): 1})
    producer = new_producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    before = [ExecutorStats(name, f"c{i}", "bolt", "w0") for i in range(20)]
    for s in before:
        producer.produce(metrics_topic(name), encode_json(s.snapshot()), key=s.instance.encode())
    producer.flush(10)
    stop = threading.Event()

    def keep_publishing() -> None:
        busy = ExecutorStats(name, "busy", "bolt", "w1")
        while not stop.is_set():
            busy.inc("executed")
            producer.produce(metrics_topic(name), encode_json(busy.snapshot()), key=busy.instance.encode())
            producer.poll(0)
            time.sleep(0.05)

    publisher = threading.Thread(target=keep_publishing, daemon=True)
    publisher.start()
    board = StatsBoard(bootstrap, name)
    try:
        time.sleep(1.0)  # the busy executor is publishing
        assert board.read_to_now(timeout_s=30.0) is True
        assert {s.instance for s in before} <= set(board.latest)
        assert publisher.is_alive()  # it finished while snapshots kept coming
    finally:
        stop.set()
        publisher.join(5)
        board.close()
        producer.flush(5)
