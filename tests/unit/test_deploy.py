"""deploy/ manifests parse, and their probes, ports and settings match the code."""

from __future__ import annotations

import configparser
from pathlib import Path
from typing import Any

import yaml

from service.config import ServiceSettings
from service.supervisor.http import HEALTH_PATH, METRICS_PATH, READY_PATH

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SETTINGS = {f"SQUALL_{name.upper()}" for name in ServiceSettings.model_fields} | {"SQUALL_CONFIG"}


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_every_yaml_manifest_parses() -> None:
    files = sorted(DEPLOY.rglob("*.yaml"))
    assert len(files) >= 5
    for f in files:
        assert docs(f), f


def test_kubernetes_probes_hit_the_supervisors_endpoints_on_its_port() -> None:
    (sts, svc) = docs(DEPLOY / "k8s" / "supervisors.yaml")
    assert sts["kind"] == "StatefulSet" and svc["kind"] == "Service"
    (c,) = sts["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert set(env) <= SETTINGS, set(env) - SETTINGS  # only settings the code reads
    port = int(env["SQUALL_HTTP_PORT"])
    assert c["ports"] == [{"name": "http", "containerPort": port}]
    assert c["livenessProbe"]["httpGet"] == {"path": HEALTH_PATH, "port": "http"}
    assert c["readinessProbe"]["httpGet"] == {"path": READY_PATH, "port": "http"}
    assert env["SQUALL_HTTP_HOST"] == "0.0.0.0"  # probes come from the kubelet, not loopback
    grace = sts["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > float(env["SQUALL_SHUTDOWN_TIMEOUT_SECS"])  # the drain finishes before SIGKILL
    assert svc["spec"]["ports"][0]["targetPort"] == "http"
    (mon,) = docs(DEPLOY / "k8s" / "servicemonitor.yaml")
    assert mon["kind"] == "ServiceMonitor" and mon["spec"]["endpoints"][0] == {"port": "http", "path": METRICS_PATH, "interval": "15s"}
    assert mon["spec"]["selector"]["matchLabels"] == svc["metadata"]["labels"]


def test_the_default_port_is_the_one_deploy_uses() -> None:
    assert ServiceSettings().http_port == 9470 and ServiceSettings().http_host == "127.0.0.1"


def test_compose_has_kafka_two_supervisors_prometheus_and_grafana() -> None:
    (compose,) = docs(DEPLOY / "compose" / "docker-compose.yaml")
    services = compose["services"]
    assert {"kafka", "supervisor-1", "supervisor-2", "prometheus", "grafana"} <= set(services)
    assert "KRaft" in (DEPLOY / "compose" / "docker-compose.yaml").read_text() and "broker,controller" in str(services["kafka"])
    from service.brokers.apache_kafka import KAFKA_VERSION

    assert services["kafka"]["image"] == f"apache/kafka:{KAFKA_VERSION}"  # the version the tests run
    for sup in ("supervisor-1", "supervisor-2"):
        env = services[sup]["environment"]
        assert set(env) <= SETTINGS and "/readyz" in str(services[sup]["healthcheck"])
    (prom,) = docs(DEPLOY / "prometheus" / "prometheus.yaml")
    targets = prom["scrape_configs"][0]["static_configs"][0]["targets"]
    assert targets == [f"supervisor-1:{services['supervisor-1']['environment']['SQUALL_HTTP_PORT']}", "supervisor-2:9470"]


def test_systemd_unit_runs_squall_serve_and_outlasts_the_drain() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(DEPLOY / "systemd" / "squall-serve.service")
    svc = unit["Service"]
    assert svc["ExecStart"].endswith("squall serve") and svc["KillSignal"] == "SIGTERM"
    text = (DEPLOY / "systemd" / "squall-serve.service").read_text().splitlines()
    env = dict(line.removeprefix("Environment=").split("=", 1) for line in text if line.startswith("Environment="))
    assert set(env) <= SETTINGS
    assert float(svc["TimeoutStopSec"]) > float(env["SQUALL_SHUTDOWN_TIMEOUT_SECS"])
