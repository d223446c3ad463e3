"""Why a secured broker refused this client, in one line: SASL authentication, TLS, or an ACL.

librdkafka reports a refused login or handshake only to a client's ``error_cb`` (the request
itself just times out as "transport failure"), and an ACL's refusal as an error code with no
resource named. A verb that failed on a broker asks here, so that the user reads what was
refused and by which broker, not that no broker answers:

* :func:`refusal` names an authentication or TLS refusal from librdkafka's error text (pure);
* :func:`why_unreachable` connects once more with an ``error_cb`` and returns that refusal;
* :func:`denied` turns an ACL's error code into the operation and resource that were denied.

Each returns :class:`~service.exceptions.BrokerAccessError` (the CLI prints it and exits 2).
The ACLs Squall needs are the README's table ("A secured Kafka"); the broker logs every
denial (``kafka.authorizer.logger``).

Example::

    >>> print(refusal("_AUTHENTICATION", "sasl_ssl://10.0.0.5:9094/bootstrap: SASL authentication error: "
    ...               "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
    ...               {"sasl.username": "squall"}).split(" (SQUALL")[0])
    broker 10.0.0.5:9094 refused SASL authentication (SCRAM-SHA-512) of user 'squall': invalid credentials
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException

from service.exceptions import BrokerAccessError
from streams.kafka.clients import KafkaSecurity, new_admin

ACL_HINT = "grant it to Squall's principal (README, 'A secured Kafka')"

AUTHORIZATION = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "topic",
    KafkaError.GROUP_AUTHORIZATION_FAILED: "group",
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: "cluster",
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "transactional id",
}
"""ACL error codes -> the kind of resource the ACL is on."""

_BROKER = re.compile(r"^(?:[a-z_]+://)?([^/\s]+?)(?:/[^:\s]*)?:\s")
_ALERT = re.compile(r"alert (bad certificate|unknown ca|certificate required|certificate unknown|certificate expired|handshake failure|access denied)")
_MECHANISM = re.compile(r"SASL mechanism (\S+)")


def broker_of(text: str, default: str = "?") -> str:
    """The ``HOST:PORT`` at the start of a librdkafka error text (``sasl_ssl://H:P/bootstrap: ...``).

    >>> broker_of("ssl://127.0.0.1:9093/1: SSL handshake failed: ..."), broker_of("1/1 brokers are down", "b:1")
    ('127.0.0.1:9093', 'b:1')
    """
    m = _BROKER.match(text)
    return m.group(1) if m else default


def refusal(code: str, text: str, security: Mapping[str, str]) -> str | None:
    """One line naming the broker and what it refused, or None if ``code``/``text`` is no refusal.

    ``code`` is the error's name (``KafkaError.name()``, e.g. ``_AUTHENTICATION``, ``_SSL``,
    ``_TRANSPORT``), ``text`` its string, ``security`` the client's librdkafka settings (only
    the user name and the certificate paths are shown, never a password).
    """
    broker = broker_of(text)
    if code in ("_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED"):
        m = _MECHANISM.search(text)
        mechanism = m.group(1) if m else security.get("sasl.mechanism", "SASL")
        why = "invalid credentials" if "invalid credentials" in text else text.split(": ", 1)[-1][:160]
        return (
            f"broker {broker} refused SASL authentication ({mechanism}) of user {security.get('sasl.username', '?')!r}: "
            f"{why} (SQUALL_KAFKA_SASL_USERNAME, SQUALL_KAFKA_SASL_PASSWORD)"
        )
    if code not in ("_SSL", "_TRANSPORT"):
        return None
    if "certificate verify failed" in text:
        return (
            f"broker {broker}'s TLS certificate is not trusted: certificate verify failed against "
            f"{security.get('ssl.ca.location', 'the system CAs')} (SQUALL_KAFKA_SSL_CA_LOCATION)"
        )
    alert = _ALERT.search(text)
    if alert:
        return (
            f"broker {broker} refused this client's TLS certificate ({alert.group(1)}): "
            f"{security.get('ssl.certificate.location', 'none given')} (SQUALL_KAFKA_SSL_CERTIFICATE_LOCATION, _KEY_LOCATION)"
        )
    if code == "_SSL":
        return f"TLS handshake with broker {broker} failed: {text.split(': ', 1)[-1][:200]}"
    return None


def why_unreachable(bootstrap: str, component: str, timeout_s: float = 3.0) -> BrokerAccessError | None:
    """Connect to ``bootstrap`` once more and return the refusal it answers with.

    None if no refusal is seen within ``timeout_s`` seconds: the broker is down or unreachable.
    """
    seen: list[KafkaError] = []
    admin = new_admin({"bootstrap.servers": bootstrap, "log_level": 0, "error_cb": seen.append})
    security = KafkaSecurity().librdkafka()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            admin.list_topics(timeout=min(1.0, max(0.1, deadline - time.monotonic())))
            return None  # it answers now
        except KafkaException:
            pass
        admin.poll(0.1)
        for err in seen:
            line = refusal(err.name(), err.str(), security)
            if line is not None:
                return BrokerAccessError(f"[{component}] {line}")
    return None


def denied(exc: KafkaException | KafkaError, component: str, bootstrap: str, operation: str, resource: str) -> BrokerAccessError | None:
    """``exc`` as the ACL refusal of ``operation`` on ``resource`` (e.g. ``"CREATE"``, ``"squall.wc.lines"``), or None if it is no ACL error.

    >>> err = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
    >>> print(denied(err, "admin", "b:9094", "CREATE", "squall.wc.lines"))
    [admin] broker b:9094 denied CREATE on topic squall.wc.lines (TOPIC_AUTHORIZATION_FAILED): grant it to Squall's principal (README, 'A secured Kafka')
    """
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError) else exc
    if not isinstance(err, KafkaError) or err.code() not in AUTHORIZATION:
        return None
    kind = AUTHORIZATION[err.code()]
    on = "the cluster" if kind == "cluster" else f"{kind} {resource}"
    return BrokerAccessError(f"[{component}] broker {bootstrap} denied {operation} on {on} ({err.name()}): {ACL_HINT}")
