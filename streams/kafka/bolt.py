"""KafkaBolt: writes tuples to Kafka topics and acks each one when the broker confirmed it (storm-kafka-client's KafkaBolt).

* **Mapping.** A :class:`TupleToKafkaMapper` gives a tuple's key, value and headers (default
  :class:`FieldNameBasedTupleToKafkaMapper`: the fields ``key`` and ``message``, Storm's
  defaults); a :class:`KafkaTopicSelector` gives its topic (a fixed one,
  :class:`DefaultTopicSelector`, or a field's value, :class:`FieldNameTopicSelector`). A
  selector that returns None skips the tuple: it is acked and counted as skipped, as Storm's
  bolt does.
* **Serializers**: ``"str"`` (``str(value)`` as UTF-8), ``"bytes"`` (bytes as they are) and
  ``"json"`` (the value as JSON), for the key and the value apart. None is a null key or
  value (a tombstone).
* **Acks.** The input tuple is acked in the producer's delivery callback, once the broker
  confirmed the record (``acks=all`` and idempotence by default), and **failed** on a
  delivery error, so its tree replays and the record is written again (at least once:
  a replay after an ack that was lost, or after a crash, writes it twice). The callbacks
  run in the executor's thread: the bolt polls the producer on every tuple and on a 0.1 s
  tick. ``fire_and_forget=True`` acks at once and ignores delivery errors (Storm's option).
* **Poison tuples.** A tuple that cannot be mapped or serialized goes to the dead-letter topic
  with the component, the input record's topic, partition and offset, and why; it is acked
  (a replay would fail the same way) and counted (``kafka_bolt_poison``).
* **Producer settings** pass through ``producer_config`` over the topology's Kafka and its
  security settings (``squall.kafka.*``); ``message.timeout.ms`` bounds how long a record may
  wait for delivery (default 30 s, below the message timeout).

Example (storm-starter's ExclamationTopology ends in a KafkaBolt; examples/exclamation.py)::

    >>> bolt = KafkaBolt("exclaimed", FieldNameBasedTupleToKafkaMapper(key_field=None, message_field="word"), value_serializer="str")
    >>> bolt.selector.topic(None), bolt.value_serializer
    ('exclaimed', 'str')
    >>> KafkaBolt("t", value_serializer="yaml").validate("sink")
    Traceback (most recent call last):
    ...
    streams.exceptions.TopologyError: [sink] KafkaBolt value_serializer must be one of ('str', 'bytes', 'json'), got 'yaml'
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from confluent_kafka import KafkaError, Message, Producer
from typing_extensions import override

from streams.config import TopologyConfig
from streams.exceptions import TopologyError
from streams.kafka.clients import new_producer
from streams.model.bolt import Bolt
from streams.model.collector import OutputCollector
from streams.model.component import OutputFieldsDeclarer
from streams.model.context import TopologyContext
from streams.model.io import DeadLetters
from streams.model.tuple import Tuple
from streams.wire.codec import encode_json

log = logging.getLogger("squall.kafka_bolt")

SERIALIZERS = ("str", "bytes", "json")
TICK_S = 0.1
"""How often an idle KafkaBolt serves its delivery callbacks (seconds)."""

Headers = Sequence[tuple[str, bytes]]


class TupleToKafkaMapper(Protocol):
    """A tuple's record (Storm's ``TupleToKafkaMapper``)."""

    def key(self, tuple: Tuple) -> Any:  # noqa: A002 - Storm's name
        """The record's key (None: no key)."""
        ...

    def message(self, tuple: Tuple) -> Any:  # noqa: A002
        """The record's value (None: a tombstone)."""
        ...

    def headers(self, tuple: Tuple) -> Headers | None:  # noqa: A002
        """The record's headers, ``[(name, bytes)]`` (None: none)."""
        ...


class FieldNameBasedTupleToKafkaMapper:
    """Key and value from two fields (Storm's ``FieldNameBasedTupleToKafkaMapper``; defaults ``key`` and ``message``).

    ``key_field=None``: no key. ``message_field=None``: the whole tuple, ``{field: value}`` (with the JSON serializer).
    """

    def __init__(self, key_field: str | None = "key", message_field: str | None = "message") -> None:
        self.key_field = key_field
        self.message_field = message_field

    def key(self, tuple: Tuple) -> Any:  # noqa: A002
        """The ``key_field`` value (None without one)."""
        return None if self.key_field is None else tuple.get(self.key_field)

    def message(self, tuple: Tuple) -> Any:  # noqa: A002
        """The ``message_field`` value, or the whole tuple as ``{field: value}``."""
        if self.message_field is None:
            return dict(zip(tuple.fields, tuple.values, strict=False))
        return tuple.get(self.message_field)

    def headers(self, tuple: Tuple) -> Headers | None:  # noqa: A002
        """No headers."""
        return None


class KafkaTopicSelector(Protocol):
    """A tuple's topic (Storm's ``KafkaTopicSelector``); None skips the tuple."""

    def topic(self, tuple: Tuple | None) -> str | None:  # noqa: A002
        """The topic to write ``tuple`` to."""
        ...


class DefaultTopicSelector:
    """Every tuple to one topic (Storm's ``DefaultTopicSelector``); ``{topology}`` in the name becomes the topology's name.

    Squall creates this topic at submit, as it creates ``set_output`` topics.
    """

    def __init__(self, topic: str) -> None:
        self.name = topic

    def topic_for(self, topology: str) -> str:
        """The topic name with ``{topology}`` replaced."""
        return self.name.replace("{topology}", topology)

    def topic(self, tuple: Tuple | None) -> str | None:  # noqa: A002
        """The one topic."""
        return self.name


class FieldNameTopicSelector:
    """The topic a field names, or ``default`` when it is empty (Storm's ``FieldNameTopicSelector``)."""

    def __init__(self, field: str, default: str | None = None) -> None:
        self.field = field
        self.default = default

    def topic(self, tuple: Tuple | None) -> str | None:  # noqa: A002
        """The field's value, else ``default``."""
        value = tuple.get(self.field) if tuple is not None else None
        return str(value) if value else self.default


class PoisonTupleError(ValueError):
    """A tuple that cannot become a record (mapping or serializing raised): dead-lettered."""


def serialize(value: Any, how: str) -> bytes | None:
    """``value`` as record bytes with serializer ``how`` (:data:`SERIALIZERS`); None stays None.

    Raises PoisonTupleError when the value does not fit (not bytes for ``bytes``, not JSON for ``json``).

    >>> serialize("hi!", "str"), serialize({"w": 1}, "json"), serialize(None, "json")
    (b'hi!', b'{"w":1}', None)
    """
    if value is None:
        return None
    if how == "str":
        return str(value).encode()
    if how == "bytes":
        if not isinstance(value, bytes | bytearray):
            raise PoisonTupleError(f"the bytes serializer got a {type(value).__name__}")
        return bytes(value)
    try:
        return encode_json(value)
    except TypeError as exc:
        raise PoisonTupleError(f"not JSON: {exc}") from exc


class KafkaBolt(Bolt):
    """Writes each tuple to a Kafka topic; acks it once delivered, fails it on a delivery error (see the module docstring).

    Args:
      topic: a topic name or a :class:`KafkaTopicSelector`.
      mapper: key, value and headers of a tuple (default: fields ``key`` and ``message``).
      key_serializer, value_serializer: ``"str"``, ``"bytes"`` or ``"json"`` (defaults ``str`` and ``json``).
      producer_config: librdkafka settings over the defaults (``acks=all``, idempotence, 30 s delivery timeout).
      fire_and_forget: ack at once, ignore delivery errors.
    """

    def __init__(
        self,
        topic: str | KafkaTopicSelector,
        mapper: TupleToKafkaMapper | None = None,
        *,
        key_serializer: str = "str",
        value_serializer: str = "json",
        producer_config: dict[str, Any] | None = None,
        fire_and_forget: bool = False,
    ) -> None:
        self.selector: KafkaTopicSelector = DefaultTopicSelector(topic) if isinstance(topic, str) else topic
        self.mapper: TupleToKafkaMapper = mapper or FieldNameBasedTupleToKafkaMapper()
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
        self.producer_config = dict(producer_config or {})
        self.fire_and_forget = fire_and_forget
        self.component = "?"
        self.producer: Producer | None = None
        self.dead_letters: DeadLetters | None = None
        self.in_flight = 0
        """Records produced and not yet confirmed or refused (count)."""
        self.delivered = 0
        self.delivery_failures = 0
        self.skipped = 0
        self.poison = 0

    # -- topology time -----------------------------------------------------------------------------
    @override
    def validate(self, component_id: str) -> None:
        check_serializers(component_id, "KafkaBolt", self.key_serializer, self.value_serializer)

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        pass  # a sink: it emits nothing

    @override
    def get_component_configuration(self) -> dict[str, Any] | None:
        tick = TopologyConfig.model_fields["tick_tuple_freq_secs"].alias
        assert tick is not None
        return {tick: TICK_S}

    # -- run time --------------------------------------------------------------------------------
    @override
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.component = context.this_component_id
        self.collector = collector
        if isinstance(self.selector, DefaultTopicSelector):
            self.selector = DefaultTopicSelector(self.selector.topic_for(context.topology.name))
        io = context.io
        self.dead_letters = io.dead_letters
        cfg = {
            "bootstrap.servers": io.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 30_000,
            "log_level": 3,
            **io.kafka.get("producer", {}),
            **self.producer_config,
        }
        self.producer = io.producers.new_producer(cfg) if io.producers is not None else new_producer(cfg)
        context.register_metric("kafka_bolt_delivered", lambda: float(self.delivered))
        context.register_metric("kafka_bolt_delivery_failures", lambda: float(self.delivery_failures))
        context.register_metric("kafka_bolt_skipped", lambda: float(self.skipped))
        context.register_metric("kafka_bolt_poison", lambda: float(self.poison))

    @override
    def execute(self, tuple: Tuple) -> None:
        assert self.producer is not None
        if tuple.is_tick:
            self.producer.poll(0)
            return
        try:
            topic = self.selector.topic(tuple)
            if topic is None:
                self.skipped += 1
                self.collector.ack(tuple)
                return
            key = serialize(self.mapper.key(tuple), self.key_serializer)
            value = serialize(self.mapper.message(tuple), self.value_serializer)
            headers = self.mapper.headers(tuple)
        except Exception as exc:  # the user's mapper or selector, or a value that does not serialize
            self._poison(tuple, exc)
            return
        self._produce(tuple, topic, key, value, headers)
        self.producer.poll(0)

    def _produce(self, tuple: Tuple, topic: str, key: bytes | None, value: bytes | None, headers: Headers | None) -> None:  # noqa: A002
        assert self.producer is not None
        callback = None if self.fire_and_forget else self._on_delivery(tuple)
        while True:
            try:
                self.producer.produce(topic, value, key, headers=list(headers) if headers else None, on_delivery=callback)
                break
            except BufferError:  # the producer's queue is full: serve deliveries, then retry
                self.producer.poll(0.1)
        if self.fire_and_forget:
            self.collector.ack(tuple)
        else:
            self.in_flight += 1

    def _on_delivery(self, tuple: Tuple) -> Callable[[KafkaError | None, Message], None]:  # noqa: A002
        def done(err: KafkaError | None, msg: Message) -> None:
            self.in_flight -= 1
            if err is None:
                self.delivered += 1
                self.collector.ack(tuple)
                return
            self.delivery_failures += 1
            log.warning(
                "[%s] record for %s[%s]@%s not delivered to %s (%s): failing the tuple, it replays",
                self.component,
                tuple.topic,
                tuple.partition,
                tuple.offset,
                msg.topic(),
                err.str(),
            )
            self.collector.fail(tuple)

        return done

    def _poison(self, tuple: Tuple, exc: Exception) -> None:  # noqa: A002
        self.poison += 1
        reason = f"KafkaBolt cannot write the tuple: {type(exc).__name__}: {exc}"
        if self.dead_letters is not None:
            raw = tuple_bytes(tuple.values)
            self.dead_letters.dead_letter_raw(raw, None, reason, topic=tuple.topic, partition=tuple.partition, offset=tuple.offset, attempts=0)
        else:
            log.error("[%s] %s (%s[%s]@%s)", self.component, reason, tuple.topic, tuple.partition, tuple.offset)
        self.collector.ack(tuple)

    @override
    def sink_topic(self, topology: str) -> str | None:
        """The one topic this bolt writes to, if fixed (a :class:`DefaultTopicSelector`), for ``topology``."""
        return self.selector.topic_for(topology) if isinstance(self.selector, DefaultTopicSelector) else None

    @override
    def cleanup(self) -> None:
        """Wait for what is in flight (up to ``message.timeout.ms``): delivered records are acked, the rest failed."""
        if self.producer is not None:
            self.producer.flush(60)


def tuple_bytes(values: list[Any]) -> bytes:
    """A tuple's values as a dead letter's value: JSON, or their ``repr`` when JSON cannot hold them."""
    try:
        return encode_json(values)
    except TypeError:
        return repr(values).encode()


def check_serializers(component_id: str, kind: str, key_serializer: str, value_serializer: str) -> None:
    """Raise TopologyError naming the component (a ``kind``: KafkaBolt, KafkaSink) for a serializer not in :data:`SERIALIZERS`."""
    for name, value in (("key_serializer", key_serializer), ("value_serializer", value_serializer)):
        if value not in SERIALIZERS:
            raise TopologyError(f"[{component_id}] {kind} {name} must be one of {SERIALIZERS}, got {value!r}")
