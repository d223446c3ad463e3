"""TLS and SASL settings reach every Kafka client (issue 15, security basics).

The embedded broker cannot check them: tansu 0.6.0 serves plaintext on a ``tls://``
listener given a certificate, and with ``--authentication`` no SCRAM user can be created
in its memory storage. So these tests check the plumbing: every client is made by
:mod:`streams.kafka.clients`'s factories, the factories add the settings, librdkafka accepts
them, workers inherit them, and a service file's ``kafka.security`` reaches the env.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from service.config import ServiceSettings
from streams import ConfigError
from streams.kafka import clients as kafka_io

ROOT = Path(__file__).resolve().parents[3]
CLIENTS = {"Consumer", "Producer", "AdminClient"}
ALLOWED = {
    "streams/kafka/clients.py",  # the factories
    "service/brokers/embedded.py",  # the embedded broker's readiness probe: a local plaintext broker by construction
    "service/brokers/apache_kafka.py",  # the launcher's readiness and leader probes: a local plaintext cluster by construction
}
SCRAM = {
    "SQUALL_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
    "SQUALL_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
    "SQUALL_KAFKA_SASL_USERNAME": "squall",
    "SQUALL_KAFKA_SASL_PASSWORD": "s3cret",
    "SQUALL_KAFKA_SSL_CA_LOCATION": "/etc/ssl/certs/ca.pem",
}


def direct_client_calls(path: Path) -> list[str]:
    """``Consumer(...)``, ``Producer(...)``, ``AdminClient(...)`` calls in a module."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else ""
            if name in CLIENTS:
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}(...)")
    return out


def test_every_client_is_made_by_the_factories() -> None:
    files = [p for pkg in ("streams", "service", "acker") for p in (ROOT / pkg).rglob("*.py")]
    assert len(files) > 50
    calls = [c for p in files if str(p.relative_to(ROOT)) not in ALLOWED for c in direct_client_calls(p)]
    assert calls == [], "make Kafka clients with streams.kafka.clients.new_consumer/new_producer/new_admin"
    factories = {c.split()[-1] for c in direct_client_calls(ROOT / "streams" / "kafka" / "clients.py")}
    assert factories == {"Consumer(...)", "Producer(...)", "AdminClient(...)"}


def test_the_factories_add_the_security_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[str, dict[str, Any]]] = []
    for cls in CLIENTS:
        monkeypatch.setattr(kafka_io, cls, lambda cfg, _cls=cls: made.append((_cls, cfg)))
    for var, value in SCRAM.items():
        monkeypatch.setenv(var, value)
    kafka_io.new_consumer({"bootstrap.servers": "k:9093", "group.id": "g"})
    kafka_io.new_producer({"bootstrap.servers": "k:9093", "security.protocol": "SSL"})  # explicit keys win
    kafka_io.new_admin({"bootstrap.servers": "k:9093"})
    assert [c for c, _ in made] == ["Consumer", "Producer", "AdminClient"]
    for cls, cfg in made:
        assert cfg["sasl.mechanism"] == "SCRAM-SHA-512" and cfg["sasl.username"] == "squall" and cfg["sasl.password"] == "s3cret", cls
        assert cfg["ssl.ca.location"] == "/etc/ssl/certs/ca.pem"
    assert [cfg["security.protocol"] for _, cfg in made] == ["SASL_SSL", "SSL", "SASL_SSL"]


def test_librdkafka_accepts_the_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("")
    for var, value in {**SCRAM, "SQUALL_KAFKA_SSL_CA_LOCATION": str(ca), "SQUALL_KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM": "none"}.items():
        monkeypatch.setenv(var, value)
    cfg = kafka_io.with_security({"bootstrap.servers": "127.0.0.1:1"})
    cfg.pop("ssl.ca.location")  # an empty CA file is rejected at construction; its key is checked above
    assert isinstance(Producer(cfg), Producer)
    monkeypatch.setenv("SQUALL_KAFKA_SECURITY_PROTOCOL", "SASL_TLS")
    with pytest.raises(ValueError, match="security_protocol"):
        kafka_io.KafkaSecurity()


def test_workers_inherit_the_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import subprocess

    from service.process import spawn

    seen: dict[str, Any] = {}
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **kw: seen.update(kw))
    monkeypatch.setenv("SQUALL_KAFKA_SASL_PASSWORD", "s3cret")
    spawn.spawn_worker(tmp_path / "plan.json", 0, tmp_path / "w0.log")
    assert seen["env"]["SQUALL_KAFKA_SASL_PASSWORD"] == "s3cret"


def test_a_service_file_security_section_goes_to_the_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    f = tmp_path / "squall.yaml"
    f.write_text("kafka:\n  security:\n    security.protocol: SASL_SSL\n    sasl.username: squall\n  producer: {linger.ms: 5}\n")
    monkeypatch.setenv("SQUALL_CONFIG", str(f))
    env = {"SQUALL_KAFKA_SASL_USERNAME": "from-env"}
    s = ServiceSettings()
    assert s.export_kafka_security(env) == {"SQUALL_KAFKA_SECURITY_PROTOCOL": "SASL_SSL"}  # env wins over the file
    assert env["SQUALL_KAFKA_SASL_USERNAME"] == "from-env"
    assert s.kafka_overrides() == {"producer": {"linger.ms": 5}}
    f.write_text("kafka:\n  security:\n    sasl.pasword: x\n")
    with pytest.raises(ConfigError, match=r"\[service\] kafka.security.sasl.pasword is not a security setting"):
        ServiceSettings().export_kafka_security({})
