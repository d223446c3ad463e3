"""Kafka client settings, the one place clients are made, and a produce helper.

Every Kafka client Squall makes (workers' executors and ackers, the runner, supervisors,
the CLI, the board, Spark sources and sinks) is built by :func:`new_consumer`,
:func:`new_producer` or :func:`new_admin`, which add the security settings of
:class:`KafkaSecurity` (env ``SQUALL_KAFKA_*``; workers inherit the env of the process that
starts them, and ``squall`` exports a service file's ``kafka: {security: ...}`` to it).
``tests/unit/test_kafka_security.py`` checks that no module makes a client any other way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from streams.config import TopologyConfig
from streams.kafka.fetch_gaps import FetchGaps

log = logging.getLogger("squall.kafka")


class KafkaSecurity(BaseSettings):
    """TLS and SASL settings given to every Kafka client (librdkafka names).

    =========================================  ================================================
    env var                                    librdkafka setting (default: unset)

    =========================================  ================================================
    ``SQUALL_KAFKA_SECURITY_PROTOCOL``         ``security.protocol``: PLAINTEXT, SSL,
                                               SASL_PLAINTEXT or SASL_SSL
    ``SQUALL_KAFKA_SASL_MECHANISM``            ``sasl.mechanism``: PLAIN, SCRAM-SHA-256,
                                               SCRAM-SHA-512
    ``SQUALL_KAFKA_SASL_USERNAME`` / ``_PASSWORD``  ``sasl.username`` / ``sasl.password``
    ``SQUALL_KAFKA_SSL_CA_LOCATION``           ``ssl.ca.location`` (PEM path)
    ``SQUALL_KAFKA_SSL_CERTIFICATE_LOCATION``  ``ssl.certificate.location`` (client cert)
    ``SQUALL_KAFKA_SSL_KEY_LOCATION``          ``ssl.key.location``; ``..._SSL_KEY_PASSWORD``
    ``SQUALL_KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM``  ``https`` (default) or ``none``

    =========================================  ================================================

    Example::

        >>> KafkaSecurity(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
        ...               sasl_username="squall", sasl_password="s3cret").librdkafka()["sasl.mechanism"]
        'SCRAM-SHA-512'
        >>> str(KafkaSecurity(sasl_password="s3cret").sasl_password)  # never shown in logs or reprs
        '**********'
    """

    model_config = SettingsConfigDict(env_prefix="SQUALL_KAFKA_", extra="ignore")

    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] | None = None
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: SecretStr | None = None
    ssl_endpoint_identification_algorithm: Literal["https", "none"] | None = None

    def librdkafka(self) -> dict[str, str]:
        """The settings that are set, as librdkafka keys (``sasl_username`` -> ``sasl.username``)."""
        out: dict[str, str] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if value is not None:
                out[name.replace("_", ".")] = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
        return out


SECURITY_ENV = {name.replace("_", "."): f"SQUALL_KAFKA_{name.upper()}" for name in KafkaSecurity.model_fields}
"""librdkafka security key -> the env var that sets it."""


SOCKET_TIMEOUT_MS = 10_000
"""librdkafka's ``socket.timeout.ms`` for every Squall client (its default is 60 s; ``cfg`` may set another).

A request to a broker whose host went silent (cut off: no reset, no answer) is given up only
after this long; only then does the client drop the connection, ask another broker who leads
now, and go on. With the default a producer whose partition leader's host was cut off sent
nothing for the whole cut (the new leader was elected after 14 s; the lease of every worker
writing there stayed lapsed until the host came back, 30 s), far beyond a worker's 3 s lease
(:mod:`streams.runtime.lease`). Ten seconds still outlasts a broker's GC pause or a
leader election."""


def with_security(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """``cfg`` plus :class:`KafkaSecurity`'s settings and :data:`SOCKET_TIMEOUT_MS` (keys ``cfg`` sets explicitly win)."""
    return {"socket.timeout.ms": SOCKET_TIMEOUT_MS, **KafkaSecurity().librdkafka(), **cfg}


def new_consumer(cfg: Mapping[str, Any]) -> Consumer:
    """A Consumer with ``cfg`` and the security settings."""
    return Consumer(with_security(cfg))


def reopen_consumer(
    old: Consumer,
    cfg: Mapping[str, Any],
    positions: list[TopicPartition],
    component: str,
    gaps: FetchGaps | None = None,
    close_timeout_s: float = 10.0,
    why: str = "offset commits keep failing",
) -> Consumer:
    """A new assign-only consumer with ``cfg``, reading ``positions``, in place of ``old``.

    For a consumer whose commits kept failing: it lost its group coordinator for good
    (:mod:`streams.kafka.commit_watch`). ``positions`` are the offsets the executor processes
    next (negative: librdkafka's logical offsets, such as ``OFFSET_BEGINNING``); ``gaps``, the
    executor's :class:`~streams.kafka.fetch_gaps.FetchGaps`, is told to expect them. ``old``
    is closed on a helper thread, waited for at most ``close_timeout_s`` seconds: a wedged
    client must not wedge its executor too. ``why`` goes in the log line.
    """
    log.warning("[%s] %s (group %s): replacing the consumer", component, why, cfg.get("group.id"))
    if gaps is not None:
        for tp in positions:
            if tp.offset >= 0:
                gaps.expect(tp.topic, tp.partition, tp.offset)
    closer = threading.Thread(target=_close_quietly, args=(old, component), name=f"{component}-close", daemon=True)
    closer.start()
    closer.join(close_timeout_s)
    if closer.is_alive():
        log.warning("[%s] the old consumer did not close within %.0f s; leaving it", component, close_timeout_s)
    new = new_consumer(cfg)
    new.assign(positions)
    log.warning(
        "[%s] opened a new consumer at %s",
        component,
        ", ".join(f"{tp.topic}[{tp.partition}]@{tp.offset}" for tp in positions) or "no partitions",
    )
    return new


def _close_quietly(consumer: Consumer, component: str) -> None:
    try:
        consumer.close()
    except (KafkaException, RuntimeError) as exc:
        log.info("[%s] closing the old consumer: %s", component, exc)


def recommit(consumer: Consumer, offsets: list[TopicPartition], component: str) -> None:
    """Commit ``offsets`` (with their metadata) now: where a new life starts past a replaced owner's late commit (:mod:`streams.wire.commits`).

    The group's committed offset would otherwise stay at the late one until this life commits
    anything (never, if the input had ended): what ``squall status``, lag and any other reader of
    the group see. A failure is logged (the next regular commit sets it).
    """
    if not offsets:
        return
    try:
        consumer.commit(offsets=offsets, asynchronous=False)
        log.info(
            "[%s] committed %s again over a replaced owner's late commit", component, ", ".join(f"{tp.topic}[{tp.partition}]@{tp.offset}" for tp in offsets)
        )
    except KafkaException as exc:
        log.warning("[%s] could not commit past a replaced owner's late commit yet: %s", component, exc)


def new_producer(cfg: Mapping[str, Any]) -> Producer:
    """A Producer with ``cfg`` and the security settings."""
    return Producer(with_security(cfg))


def new_admin(cfg: Mapping[str, Any]) -> AdminClient:
    """An AdminClient with ``cfg`` and the security settings."""
    return AdminClient(with_security(cfg))


def consumer_config(bootstrap: str, group: str, conf: TopologyConfig, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Consumer settings tuned for both real Kafka and the embedded broker.

    The fetch wait is ``squall.kafka.fetch.wait.max.ms``, the most bytes per partition per
    fetch ``squall.kafka.max.partition.fetch.bytes``, the session ``squall.kafka.session.timeout.ms``.

    ``fetch.queue.backoff.ms`` is the fetch wait too (librdkafka's default is 1 s): when a
    consumer's prefetch queue is full (``queued.max.messages.kbytes``) because its reader holds
    back (a spout at its bound, :mod:`streams.kafka.feed`), librdkafka fetches again only after
    this long. Measured on the embedded broker, 20,000 records of 10 KB, a 2 MiB queue and a reader
    taking 100 records every 10 ms: 65.9 s with 1 s (a gap of ~1 s every queue-full), 4.2 s with 50 ms.
    """
    cfg: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "session.timeout.ms": conf.session_timeout_ms,
        "heartbeat.interval.ms": max(500, conf.session_timeout_ms // 6),
        "fetch.wait.max.ms": conf.fetch_wait_max_ms,
        "max.partition.fetch.bytes": conf.max_partition_fetch_bytes,
        "fetch.queue.backoff.ms": conf.fetch_wait_max_ms,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
        "topic.metadata.refresh.interval.ms": 5000,
        "log_level": 3,
    }
    cfg.update(overrides or {})
    return cfg


class DeliveryTracker:
    """Counts delivery failures reported by librdkafka (thread-safe).

    An executor compares ``failures`` before and after a flush: if outputs were lost,
    it fails the trees it was about to ack, so they are replayed.
    """

    def __init__(self, component: str) -> None:
        self.component = component
        self.failures = 0
        self._lock = threading.Lock()

    def __call__(self, err: KafkaError | None, msg: Message) -> None:
        """The producer's delivery callback: count and log a failed delivery (naming the component)."""
        if err is not None:
            with self._lock:
                self.failures += 1
            if err.code() in (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT):
                return  # purged on purpose (flush_patiently's give_up), which says so once
            log.error("[%s] delivery to %s[%s] failed: %s", self.component, msg.topic(), msg.partition(), err)


def transit_s(msg: Message, now: float) -> float | None:
    """Seconds from the producer's timestamp of ``msg`` to ``now`` (Unix seconds): one hop's flush wait + broker + fetch wait.

    None without a timestamp. Assumes synchronised clocks (true on one machine; NTP-level
    elsewhere).
    """
    kind, ms = msg.timestamp()
    if kind == TIMESTAMP_NOT_AVAILABLE or ms <= 0:
        return None
    return max(0.0, now - float(ms) / 1000.0)


RELIABLE_PRODUCER: dict[str, Any] = {"acks": "all", "enable.idempotence": True}
"""What every producer of tuples, acker ops and outputs sets: each record written once, in order.

Storm's acker needs every op applied once (an ack val is an XOR): without idempotence a
retried batch the leader had appended is written twice, and an ``init`` written twice
completes its trees early (docs/design.md, "Each record written once: idempotent producers")."""


def producer_config(bootstrap: str, conf: TopologyConfig, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Producer settings: :data:`RELIABLE_PRODUCER`, linger, compression, large local queues; ``overrides`` win.

    ``acks=all`` and idempotence; ``squall.kafka.linger.ms`` and ``squall.kafka.compression.type``.
    """
    cfg: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "linger.ms": conf.linger_ms,
        "compression.type": conf.compression_type,
        **RELIABLE_PRODUCER,
        "queue.buffering.max.messages": 500_000,
        "batch.num.messages": 10_000,
        "log_level": 3,
    }
    cfg.update(overrides or {})
    return cfg


def make_producer(bootstrap: str, conf: TopologyConfig, component: str, overrides: Mapping[str, Any] | None = None) -> tuple[Producer, DeliveryTracker]:
    """A producer for ``component`` and the :class:`DeliveryTracker` that counts its failed deliveries."""
    tracker = DeliveryTracker(component)
    cfg = producer_config(bootstrap, conf, overrides)
    cfg["on_delivery"] = tracker
    return new_producer(cfg), tracker


class ProducedBytes:
    """Bytes of keys and values handed to a producer: ``squall_produced_bytes_total``.

    What an executor writes to the broker, before batching, compression and replication.
    """

    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total = 0


def committed_offsets(consumer: Consumer, tps: list[TopicPartition], component: str, warn_every_s: float = 10.0, give_up_s: float = 300.0) -> dict[int, int]:
    """The group's committed offsets of ``tps`` (one topic), ``{partition: offset}``; partitions with none are absent.

    Asked explicitly, and again while the group's coordinator is not ready (a new group or a
    new ``__consumer_offsets`` on Apache Kafka answers NOT_COORDINATOR or
    COORDINATOR_LOAD_IN_PROGRESS for a while, and a failover moves coordinators): an
    ``assign()`` that left it to librdkafka could stay without a position for good (seen on
    Kafka 4.4 at the first start of a topology). Says so every ``warn_every_s`` seconds.
    Raises KafkaException after ``give_up_s`` seconds.
    """
    return {p: off for p, (off, _) in committed_with_metadata(consumer, tps, component, warn_every_s, give_up_s).items()}


def committed_with_metadata(
    consumer: Consumer, tps: list[TopicPartition], component: str, warn_every_s: float = 10.0, give_up_s: float = 300.0
) -> dict[int, tuple[int, str]]:
    """:func:`committed_offsets` with each commit's metadata: ``{partition: (offset, metadata)}`` (metadata ``""`` when none)."""
    started = time.monotonic()
    next_warning = started + warn_every_s
    while True:
        try:
            got = consumer.committed(tps, timeout=warn_every_s)
            bad = [tp for tp in got if tp.error is not None]
            if not bad:
                return {tp.partition: (tp.offset, tp.metadata or "") for tp in got if tp.offset >= 0}
            error: Any = bad[0].error
        except KafkaException as exc:
            error = exc
        now = time.monotonic()
        if now - started > give_up_s:
            raise error if isinstance(error, KafkaException) else KafkaException(error)
        if now >= next_warning:
            next_warning = now + warn_every_s
            which = ", ".join(f"{tp.topic}[{tp.partition}]" for tp in tps)
            log.warning("[%s] committed offsets of %s not known yet (%s); asking again", component, which, error)
        time.sleep(0.2)


def flush_patiently(producer: Producer, component: str, what: str, warn_every_s: float = 10.0, give_up: Callable[[], bool] | None = None) -> None:
    """Flush until every queued record is delivered or failed, however long the broker takes.

    A paused, restarting or failing-over broker is waited for, and said so every
    ``warn_every_s`` seconds (naming ``component`` and ``what``); librdkafka itself fails a
    record after ``message.timeout.ms`` (5 minutes by default), which the caller's delivery
    callback sees. With ``give_up``, checked every 0.5 s: once it returns True, what is still
    queued or in flight is purged (each record's delivery callback sees it fail) and the flush
    returns (a worker whose lease lapsed: :mod:`streams.runtime.lease`).
    """
    waited = 0.0
    step = warn_every_s if give_up is None else min(0.5, warn_every_s)
    next_warning = warn_every_s
    while producer.flush(step) > 0:
        waited += step
        if give_up is not None and give_up():
            _purge(producer, component, what, waited)
            return
        next_warning = _warn_waiting(component, what, waited, next_warning, warn_every_s)


def _purge(producer: Producer, component: str, what: str, waited_s: float) -> None:
    """Purge what is queued or in flight (each record's delivery callback sees it fail, served here), saying so."""
    left = len(producer)
    producer.purge(in_queue=True, in_flight=True)
    producer.flush(0)  # serve the purged records' callbacks
    log.warning("[%s] %s: %d records purged unconfirmed after %.1f s: the worker's lease lapsed", component, what, left, waited_s)


def _warn_waiting(component: str, what: str, waited_s: float, next_warning: float, warn_every_s: float) -> float:
    """Say that ``what`` still waits for the broker once ``waited_s`` reached ``next_warning``; returns the next warning's time."""
    if waited_s < next_warning:
        return next_warning
    log.warning("[%s] %s not yet confirmed by the broker after %.0f s; waiting for it", component, what, waited_s)
    return next_warning + warn_every_s


class TrackedGeneration(Protocol):
    """The delivery callback a record is produced with, counting it (:class:`streams.runtime.flush_pipeline.FlushGeneration`)."""

    def produced(self) -> None:
        """Count one record produced with this callback."""

    def __call__(self, err: Any, msg: Any) -> None:
        """The record's delivery report."""


class Generations(Protocol):
    """Where the generation open now is (:class:`streams.runtime.flush_pipeline.FlushPipeline`)."""

    @property
    def current(self) -> TrackedGeneration:
        """The generation open now."""


def wait_patiently(
    producer: Producer,
    component: str,
    what: str,
    done: Callable[[], bool],
    warn_every_s: float = 10.0,
    give_up: Callable[[], bool] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Serve the producer's delivery reports until ``done()``, however long the broker takes.

    :func:`flush_patiently` for a caller that waits for some records, not all (an executor
    waiting for one flush generation: :mod:`streams.runtime.flush_pipeline`). Says so every
    ``warn_every_s`` seconds, naming ``component`` and ``what``. With ``give_up``, checked every
    0.5 s: once it returns True, everything queued or in flight is purged (each record's delivery
    callback sees it fail, which makes ``done()`` true for a caller counting reports) and the wait ends.
    ``clock``: seconds (monotonic), injectable for tests.
    """
    started = clock()
    next_warning = warn_every_s
    next_check = 0.5
    while not done():
        producer.poll(0.05)
        waited = clock() - started
        if give_up is not None and waited >= next_check:
            next_check = waited + 0.5
            if give_up():
                _purge(producer, component, what, waited)
                return
        next_warning = _warn_waiting(component, what, waited, next_warning, warn_every_s)


def produce_fn(producer: Producer, counter: ProducedBytes | None = None, generations: Generations | None = None) -> Callable[..., None]:
    """``produce(topic, value, key=None, partition=-1, headers=None)`` that waits (polls) while the local queue is full instead of raising BufferError.

    With ``counter``, each record's key and value bytes are added to it. With ``generations``,
    each record is produced with the open generation as its delivery callback, and counted
    in it (:mod:`streams.runtime.flush_pipeline`); without, the producer's own callback sees it.
    """
    p = producer.produce
    poll = producer.poll
    sent = counter if counter is not None else ProducedBytes()
    if generations is not None:
        return _tracked_produce(p, poll, sent, generations)

    def produce(topic: str, value: bytes | None, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
        sent.total += (len(value) if value else 0) + (len(key) if key else 0)
        while True:
            try:
                if headers is None:
                    p(topic, value, key, partition)
                else:
                    p(topic, value, key, partition, headers=headers)
                return
            except BufferError:
                poll(0.05)

    return produce


def _tracked_produce(p: Callable[..., None], poll: Callable[[float], int], sent: ProducedBytes, generations: Generations) -> Callable[..., None]:
    """:func:`produce_fn`'s ``produce`` with each record counted in, and reported to, the open generation."""

    def produce(topic: str, value: bytes | None, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
        sent.total += (len(value) if value else 0) + (len(key) if key else 0)
        gen = generations.current
        while True:
            try:
                if headers is None:
                    p(topic, value, key, partition, on_delivery=gen)
                else:
                    p(topic, value, key, partition, on_delivery=gen, headers=headers)
                gen.produced()
                return
            except BufferError:
                poll(0.05)

    return produce


def at_high_watermarks(consumer: Consumer, tps: list[TopicPartition]) -> bool:
    """Every partition's position is at its high watermark, as a Fetch response reported it (unknown before the first Fetch answered: then False).

    A partition that holds no record (never written, or every record purged: its log start
    offset is its high watermark) is at its end whatever the position: nothing was consumed,
    so librdkafka reports no position for it.
    """
    for tp, pos in zip(tps, consumer.position(tps), strict=True):
        low, high = consumer.get_watermark_offsets(tp, cached=True)
        if high is None or high < 0:
            return False
        if high == 0 or (low is not None and low >= high):
            continue
        if pos.offset is None or pos.offset < high:
            return False
    return True


def true_end_offsets(
    bootstrap: str, tps: list[tuple[str, int]], timeout_s: float = 10.0, *, component: str = "?", overrides: Mapping[str, Any] | None = None
) -> dict[tuple[str, int], int]:
    """The end offset (high watermark) of each partition, taken from Fetch responses.

    ListOffsets(LATEST) can sit below the true end on the embedded broker, so
    ``OFFSET_END`` cannot be trusted there; a Fetch response's high watermark can.
    Raises ``TimeoutError`` naming ``component`` if a partition's high watermark is not
    known in time. ``overrides``: consumer settings (security settings included).
    """
    c = new_consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "squall.__watermarks",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
            "log_level": 0,
            **(overrides or {}),
        }
    )
    try:
        c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in tps])
        ends: dict[tuple[str, int], int] = {}
        deadline = time.monotonic() + timeout_s
        while len(ends) < len(tps):
            c.consume(1, 0.1)
            for t, p in tps:
                high = c.get_watermark_offsets(TopicPartition(t, p), cached=True)[1]
                if high is not None and high >= 0:
                    ends[(t, p)] = high
            if time.monotonic() > deadline:
                missing = [tp for tp in tps if tp not in ends]
                raise TimeoutError(f"[{component}] no high watermark for {missing} after {timeout_s} s (is the broker at {bootstrap} up?)")
        return ends
    finally:
        c.close()
