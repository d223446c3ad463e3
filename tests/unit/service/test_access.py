"""A secured broker's refusals, in one line (service.brokers.access): librdkafka's error texts as the secured-Kafka test saw them."""

from __future__ import annotations

import string

import pytest
from confluent_kafka import KafkaError, KafkaException
from hypothesis import given
from hypothesis import strategies as st

from service.brokers.access import broker_of, denied, refusal
from service.exceptions import BrokerAccessError

SCRAM = {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "squall", "sasl.password": "s3cret", "ssl.ca.location": "/pki/ca.pem"}
MTLS = {"ssl.ca.location": "/pki/ca.pem", "ssl.certificate.location": "/pki/client.pem", "ssl.key.location": "/pki/client.key"}

SEEN = [
    (
        "_AUTHENTICATION",
        "sasl_ssl://127.0.0.1:13755/bootstrap: SASL authentication error: Authentication failed during authentication due to invalid credentials"
        " with SASL mechanism SCRAM-SHA-512 (after 310ms in state AUTH_REQ)",
        SCRAM,
        "broker 127.0.0.1:13755 refused SASL authentication (SCRAM-SHA-512) of user 'squall': invalid credentials"
        " (SQUALL_KAFKA_SASL_USERNAME, SQUALL_KAFKA_SASL_PASSWORD)",
    ),
    (
        "_SSL",
        "sasl_ssl://127.0.0.1:13755/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate verify failed: broker certificate"
        " could not be verified, verify that ssl.ca.location is correctly configured (after 6ms in state SSL_HANDSHAKE)",
        SCRAM,
        "broker 127.0.0.1:13755's TLS certificate is not trusted: certificate verify failed against /pki/ca.pem (SQUALL_KAFKA_SSL_CA_LOCATION)",
    ),
    (
        "_TRANSPORT",
        "ssl://127.0.0.1:13756/bootstrap: Receive failed: error:0A000412:SSL routines::sslv3 alert bad certificate: SSL alert number 42"
        " (after 0ms in state APIVERSION_QUERY)",
        MTLS,
        "broker 127.0.0.1:13756 refused this client's TLS certificate (bad certificate): /pki/client.pem"
        " (SQUALL_KAFKA_SSL_CERTIFICATE_LOCATION, _KEY_LOCATION)",
    ),
]


@pytest.mark.parametrize(("code", "text", "security", "line"), SEEN)
def test_each_refusal_names_the_broker_and_what_it_refused(code: str, text: str, security: dict[str, str], line: str) -> None:
    assert refusal(code, text, security) == line


@pytest.mark.parametrize(
    ("code", "text"),
    [("_TRANSPORT", "127.0.0.1:9092/1: Connect to ipv4#127.0.0.1:9092 failed: Connection refused"), ("_ALL_BROKERS_DOWN", "1/1 brokers are down")],
)
def test_a_broker_that_is_down_is_no_refusal(code: str, text: str) -> None:
    assert refusal(code, text, SCRAM) is None


@given(
    password=st.text(alphabet="!#%&*+=~^", min_size=3),
    code=st.sampled_from(["_AUTHENTICATION", "_SSL", "_TRANSPORT"]),
    text=st.text(alphabet=string.ascii_letters + string.digits + " :/.-_"),
)
def test_a_refusal_never_shows_the_password(password: str, code: str, text: str) -> None:
    line = refusal(code, text, {**SCRAM, "sasl.password": password, "ssl.key.password": password})
    assert line is None or password not in line


def test_an_acl_error_names_the_operation_and_resource() -> None:
    for code, on in [
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, "topic squall.wc.lines"),
        (KafkaError.GROUP_AUTHORIZATION_FAILED, "group squall.wc.lines"),
        (KafkaError.CLUSTER_AUTHORIZATION_FAILED, "the cluster"),
    ]:
        err = denied(KafkaException(KafkaError(code, "Authorization failed.")), "admin", "b:9094", "READ", "squall.wc.lines")
        assert isinstance(err, BrokerAccessError)
        assert str(err).startswith(f"[admin] broker b:9094 denied READ on {on} (")
    assert denied(KafkaException(KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "exists")), "admin", "b:9094", "CREATE", "t") is None


def test_broker_of_reads_the_address_librdkafka_puts_first() -> None:
    assert broker_of("sasl_ssl://[::1]:9094/bootstrap: SASL authentication error") == "[::1]:9094"
    assert broker_of("SASL authentication error: no broker here", "b:1") == "b:1"
