"""A secured Apache Kafka for the tests: TLS certificates made here, SCRAM-SHA-512 and mutual TLS, ACLs on.

One node (:class:`service.brokers.apache_kafka.ApacheKafka`) with three broker listeners:

* ``SASL_SSL``: TLS, then SCRAM-SHA-512 (users made at format time, KIP-900: ``--add-scram``);
* ``MTLS``: TLS with a client certificate required (``ssl.client.auth=required``); the
  principal is the certificate's CN (``ssl.principal.mapping.rules``), so ``CN=squall`` is
  ``User:squall``, as the SCRAM user is;
* ``PLAINTEXT``, the brokers' own and the test's admin (``User:ANONYMOUS`` is a super user):
  it grants and revokes the ACLs and is never given to Squall.

``StandardAuthorizer`` is on and ``allow.everyone.if.no.acl.found`` is false: a principal may
do only what an ACL grants. :func:`grant` gives a principal the README's table
(:data:`SQUALL_ACLS`), so the tests check that the table is exactly enough.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, ResourceType
from confluent_kafka.admin import AclOperation as Op
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from service.brokers.apache_kafka import ApacheKafka

PASSWORD = "squall-s3cret"
"""The SCRAM password of the users ``squall`` and ``other``."""

SQUALL_ACLS: list[tuple[ResourceType, str, ResourcePatternType, AclOperation]] = [
    *[(ResourceType.TOPIC, "squall.", ResourcePatternType.PREFIXED, op) for op in (Op.CREATE, Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE)],
    *[(ResourceType.GROUP, "squall.", ResourcePatternType.PREFIXED, op) for op in (Op.READ, Op.DESCRIBE)],
    *[(ResourceType.TRANSACTIONAL_ID, "squall.", ResourcePatternType.PREFIXED, op) for op in (Op.DESCRIBE, Op.WRITE)],
]
"""The README's ACL table (section "A secured Kafka"): what the Squall principal is granted (the
rows for a user's own input and output topics are not needed: the tests' topologies use Squall's)."""


@dataclass
class Pki:
    """PEM files: a CA, the broker's certificate, a client certificate the CA signed (CN=squall),
    and a stranger's CA with a client certificate of its own (CN=squall, signed by the stranger)."""

    ca: Path
    broker: Path
    client_cert: Path
    client_key: Path
    stranger_ca: Path
    stranger_cert: Path
    stranger_key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: str, issuer_key: ec.EllipticCurvePrivateKey, ca: bool, server: bool = False
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def make_pki(folder: Path) -> Pki:
    """Make the certificates (ECDSA P-256, valid two days) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, stranger_key = _key(), _key()
    ca = _cert("squall-test-ca", ca_key, "squall-test-ca", ca_key, ca=True)
    stranger = _cert("stranger-ca", stranger_key, "stranger-ca", stranger_key, ca=True)
    broker_key, client_key, rogue_key = _key(), _key(), _key()
    broker = _cert("localhost", broker_key, "squall-test-ca", ca_key, ca=False, server=True)
    client = _cert("squall", client_key, "squall-test-ca", ca_key, ca=False)
    rogue = _cert("squall", rogue_key, "stranger-ca", stranger_key, ca=False)
    pki = Pki(
        folder / "ca.pem",
        folder / "broker.pem",
        folder / "client.pem",
        folder / "client.key",
        folder / "stranger-ca.pem",
        folder / "stranger.pem",
        folder / "stranger.key",
    )
    pki.ca.write_bytes(_pem(ca))
    pki.broker.write_bytes(_key_pem(broker_key) + _pem(broker) + _pem(ca))  # Kafka's PEM key store: the key, then the chain
    pki.client_cert.write_bytes(_pem(client))
    pki.client_key.write_bytes(_key_pem(client_key))
    pki.stranger_ca.write_bytes(_pem(stranger))
    pki.stranger_cert.write_bytes(_pem(rogue))
    pki.stranger_key.write_bytes(_key_pem(rogue_key))
    return pki


def secured_kafka(workdir: Path, pki: Pki, cache: Path | None = None) -> ApacheKafka:
    """An :class:`ApacheKafka` (not started) with the ``SASL_SSL`` and ``MTLS`` listeners and ACLs on."""
    scram = f"SCRAM-SHA-512=[name=squall,password={PASSWORD}]"
    other = f"SCRAM-SHA-512=[name=other,password={PASSWORD}]"
    return ApacheKafka(
        workdir=workdir,
        cache=cache,
        listeners={"SASL_SSL": "SASL_SSL", "MTLS": "SSL"},
        format_args=["--add-scram", scram, "--add-scram", other],
        config={
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "false",
            "super.users": "User:ANONYMOUS",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "listener.name.mtls.ssl.client.auth": "required",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.broker),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca),
            "ssl.principal.mapping.rules": "RULE:^CN=([a-zA-Z0-9._-]+).*$/$1/,DEFAULT",
        },
    )


def scram_env(kafka: ApacheKafka, pki: Pki, user: str = "squall", password: str = PASSWORD) -> dict[str, str]:
    """The env of a Squall process that uses the ``SASL_SSL`` listener as ``user``."""
    return {
        "SQUALL_BOOTSTRAP_SERVERS": kafka.nodes[1].listener("SASL_SSL"),
        "SQUALL_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "SQUALL_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "SQUALL_KAFKA_SASL_USERNAME": user,
        "SQUALL_KAFKA_SASL_PASSWORD": password,
        "SQUALL_KAFKA_SSL_CA_LOCATION": str(pki.ca),
    }


def mtls_env(kafka: ApacheKafka, pki: Pki, stranger: bool = False) -> dict[str, str]:
    """The env of a Squall process that uses the ``MTLS`` listener with the client certificate
    (``stranger``: the one the broker's CA did not sign)."""
    return {
        "SQUALL_BOOTSTRAP_SERVERS": kafka.nodes[1].listener("MTLS"),
        "SQUALL_KAFKA_SECURITY_PROTOCOL": "SSL",
        "SQUALL_KAFKA_SSL_CA_LOCATION": str(pki.ca),
        "SQUALL_KAFKA_SSL_CERTIFICATE_LOCATION": str(pki.stranger_cert if stranger else pki.client_cert),
        "SQUALL_KAFKA_SSL_KEY_LOCATION": str(pki.stranger_key if stranger else pki.client_key),
    }


def grant(kafka: ApacheKafka, principal: str = "User:squall", without: tuple[ResourceType, AclOperation] | None = None) -> None:
    """Give ``principal`` the README's ACL table (as the super user, on the PLAINTEXT listener), ``without`` one kind of row."""
    rows = [(rt, name, pt, op) for rt, name, pt, op in SQUALL_ACLS if (rt, op) != without]
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap, "log_level": 0})
    bindings = [AclBinding(rt, name, pt, principal, "*", op, AclPermissionType.ALLOW) for rt, name, pt, op in rows]
    for fut in admin.create_acls(bindings).values():
        fut.result(timeout=30)


def revoke(kafka: ApacheKafka, resource: ResourceType, name: str, operation: AclOperation, principal: str = "User:squall") -> None:
    """Take one row of the table from ``principal``."""
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap, "log_level": 0})
    flt = AclBindingFilter(resource, name, ResourcePatternType.ANY, principal, "*", operation, AclPermissionType.ALLOW)
    for fut in admin.delete_acls([flt]).values():
        fut.result(timeout=30)
