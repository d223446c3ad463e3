"""Squall on a secured Apache Kafka: SASL_SSL with SCRAM-SHA-512, mutual TLS, ACLs on (issue 52).

The broker (:mod:`tests.integration.secured_kafka`) grants the Squall principal exactly the
README's ACL table, so a needed ACL the table lacks fails here. The service scenario runs on
SCRAM and the exactly-once word count on mutual TLS; a wrong password, a certificate either
side does not trust and a missing ACL each print one line naming the broker and what was
refused, and exit 2.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AclOperation, ResourceType

from service.brokers.apache_kafka import ApacheKafka
from tests.integration.conftest import CACHE, EXAMPLES, assert_exact, corpus_slice, direct_count
from tests.integration.secured_kafka import Pki, grant, make_pki, mtls_env, scram_env, secured_kafka
from tests.integration.service_harness import ROOT, WORDCOUNT, Cluster

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApacheKafka, Pki]]:
    root = tmp_path_factory.mktemp("secured")
    pki = make_pki(root / "pki")
    kafka = secured_kafka(root / "kafka", pki, cache=CACHE)
    kafka.start()
    try:
        grant(kafka)
        grant(kafka, "User:other", without=(ResourceType.TOPIC, AclOperation.CREATE))
        yield kafka, pki
    finally:
        kafka.stop()


def use(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> str:
    """Set ``env`` for this process (its clients) and the ones it starts; returns the bootstrap."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env["SQUALL_BOOTSTRAP_SERVERS"]


def test_service_runs_on_sasl_ssl_with_scram(secured: tuple[ApacheKafka, Pki], corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kafka, pki = secured
    bootstrap = use(monkeypatch, scram_env(kafka, pki))
    cluster = Cluster(bootstrap, tmp_path)
    cluster.namespace = "squall"  # the README's table grants the squall. prefix: the default namespace
    try:
        src = corpus_slice(corpus, tmp_path / "in.txt", 10_000)
        for sid in ("s1", "s2"):
            cluster.serve(sid)
        wc = f"sec{tmp_path.name[-6:]}".replace("_", "")
        out = cluster.squall("submit", str(WORDCOUNT), "--name", wc)
        assert out.stdout.startswith(f"submitted {wc}: 4 workers")
        cluster.wait_ready(["s1", "s2"], 4)
        feeder = cluster.feed(f"squall.{wc}.lines", src, seconds=5)
        assert feeder.wait(120) == 0
        cluster.wait_committed(wc, 10_000)
        assert_exact(cluster.counts(wc), direct_count(src), lambda: cluster.spout_totals(wc))
        assert cluster.status(wc)["status"] == "ACTIVE"
        assert wc in cluster.squall("list").stdout
        assert cluster.squall("rebalance", wc, "-e", "count=2").stdout.startswith(f"rebalanced {wc}")
        assert cluster.status(wc)["components"]["count"]["executors"] == 2
        cluster.squall("kill", wc, "-w", "1")
        assert wc not in cluster.squall("list").stdout
        assert denials(kafka) == []
    finally:
        cluster.close()


def test_exactly_once_word_count_runs_on_mutual_tls(secured: tuple[ApacheKafka, Pki], corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kafka, pki = secured
    use(monkeypatch, mtls_env(kafka, pki))
    src = corpus_slice(corpus, tmp_path / "in.txt", 5_000)
    out = tmp_path / "counts.json"
    env = dict(os.environ, SQUALL_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT))
    got = subprocess.run(
        [sys.executable, "-m", "service.cli", "run", str(EXAMPLES / "wordcount_exactly_once.py"), "--input", str(src), "--output", str(out), "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
        timeout=400,
    )
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-3000:]
    assert json.loads(out.read_text()) == dict(direct_count(src))
    assert "batches committed" in got.stdout
    assert denials(kafka) == []


def denials(kafka: ApacheKafka, principal: str = "User:squall") -> list[str]:
    """The operations the broker's authorizer denied ``principal`` so far (its log, ``kafka.authorizer.logger``)."""
    log = kafka.nodes[1].log_path.read_text(errors="replace")
    return [line for line in log.splitlines() if f"Principal = {principal} is Denied" in line]


def test_a_refused_login_certificate_or_acl_prints_one_line_and_exits_2(secured: tuple[ApacheKafka, Pki], tmp_path: Path) -> None:
    kafka, pki = secured
    sasl, mtls = kafka.nodes[1].listener("SASL_SSL"), kafka.nodes[1].listener("MTLS")

    def squall(env: dict[str, str], *args: str) -> str:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("SQUALL_")}
        got = subprocess.run(
            [sys.executable, "-m", "service.cli", *args],
            capture_output=True,
            text=True,
            env={**clean, **env, "SQUALL_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)},
            timeout=120,
        )
        assert got.returncode == 2, (got.returncode, got.stdout, got.stderr)
        assert got.stdout == "" and len(got.stderr.strip().splitlines()) == 1, got.stderr  # one line, no librdkafka log, no traceback
        return got.stderr.strip()

    wrong = squall(scram_env(kafka, pki, password="not-the-password"), "list")
    assert wrong == (
        f"error: [control] broker {sasl} refused SASL authentication (SCRAM-SHA-512) of user 'squall': invalid credentials"
        " (SQUALL_KAFKA_SASL_USERNAME, SQUALL_KAFKA_SASL_PASSWORD)"
    )
    untrusted_broker = squall({**scram_env(kafka, pki), "SQUALL_KAFKA_SSL_CA_LOCATION": str(pki.stranger_ca)}, "list")
    assert untrusted_broker == (
        f"error: [control] broker {sasl}'s TLS certificate is not trusted: certificate verify failed against {pki.stranger_ca} (SQUALL_KAFKA_SSL_CA_LOCATION)"
    )
    untrusted_client = squall(mtls_env(kafka, pki, stranger=True), "list")
    assert untrusted_client == (
        f"error: [control] broker {mtls} refused this client's TLS certificate (bad certificate): {pki.stranger_cert}"
        " (SQUALL_KAFKA_SSL_CERTIFICATE_LOCATION, _KEY_LOCATION)"
    )
    no_create = squall(scram_env(kafka, pki, user="other"), "submit", str(WORDCOUNT), "--name", "denied")
    assert re.fullmatch(
        rf"error: \[admin\] broker {re.escape(sasl)} denied CREATE on topic squall\.\S+ \(TOPIC_AUTHORIZATION_FAILED\): "
        r"grant it to Squall's principal \(README, 'A secured Kafka'\)",
        no_create,
    ), no_create
    assert any("operation = CREATE" in line for line in denials(kafka, "User:other"))  # the broker logged the same denial
    print("\n".join([wrong, untrusted_broker, untrusted_client, no_create]))
