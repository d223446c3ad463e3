"""KafkaBolt (issue 30): a tuple is acked only once the broker confirmed its record, failed on a
delivery error, and a tuple that cannot become a record is dead-lettered; no broker (the
producer is a stand-in that holds delivery reports until the test releases them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams import KafkaSpout, TopologyBuilder, Tuple
from streams.exceptions import TopologyError
from streams.kafka.bolt import DefaultTopicSelector, FieldNameBasedTupleToKafkaMapper, FieldNameTopicSelector, KafkaBolt, PoisonTupleError, serialize
from streams.model.context import TopologyContext
from streams.model.io import ExecutorIO
from streams.model.tuple import tick_tuple
from streams.runtime.acks import AckBuffer
from tests.unit.sim import Capture, collector


class Report:
    def __init__(self, topic: str) -> None:
        self._topic = topic

    def topic(self) -> str:
        return self._topic


class Err:
    def str(self) -> str:
        return "Broker: Unknown topic or partition"


class FakeProducer:
    """Holds each record's delivery callback until :meth:`deliver`; ``full`` BufferErrors first."""

    def __init__(self) -> None:
        self.records: list[tuple[str, bytes | None, bytes | None, Any]] = []
        self.waiting: list[tuple[str, Callable[[Any, Any], None]]] = []
        self.full = 0
        self.polls = 0

    def produce(self, topic: str, value: bytes | None, key: bytes | None, headers: Any = None, on_delivery: Any = None) -> None:
        if self.full:
            self.full -= 1
            raise BufferError("queue full")
        self.records.append((topic, key, value, headers))
        if on_delivery is not None:
            self.waiting.append((topic, on_delivery))

    def poll(self, timeout: float = 0) -> int:
        self.polls += 1
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0

    def deliver(self, ok: bool = True) -> None:
        topic, cb = self.waiting.pop(0)
        cb(None if ok else Err(), Report(topic))


class Sink:
    def __init__(self, bolt: KafkaBolt) -> None:
        b = TopologyBuilder()
        b.set_spout("lines", KafkaSpout())
        b.set_bolt("sink", bolt).shuffle_grouping("lines")
        t = b.create_topology("kb")
        made = t.components["sink"].new_instance()
        assert isinstance(made, KafkaBolt)
        self.bolt: KafkaBolt = made
        self.acks = AckBuffer("acker", 1)
        self.dead: list[tuple[Any, ...]] = []
        io = ExecutorIO("127.0.0.1:9", dead_letters=self)
        self.bolt.prepare({}, TopologyContext(t, "sink", t.components["sink"].task_base, io=io), collector(Capture(), self.acks))
        self.producer = FakeProducer()
        self.bolt.producer = self.producer

    def dead_letter(self, msg: Any, reason: str, attempts: int, details: Any = None) -> None:
        raise AssertionError("a KafkaBolt dead-letters by parts")

    def dead_letter_raw(self, *a: Any, **kw: Any) -> None:
        """The harness is the executor's dead-letter sink: it keeps what it is given."""
        self.dead.append((*a, kw))


def rec(root: int, values: list[Any], fields: tuple[str, ...] = ("key", "message")) -> Tuple:
    return Tuple(values, "default", "lines", 1, {root: 5}, {f: i for i, f in enumerate(fields)}, "squall.kb.sink", 0, root)


def test_a_tuple_is_acked_only_when_its_record_is_delivered_and_failed_when_it_is_not() -> None:
    s = Sink(KafkaBolt("out.{topology}"))
    a, b = rec(1, ["k1", {"n": 1}]), rec(2, ["k2", "v2"])
    s.bolt.execute(a)
    s.bolt.execute(b)
    assert s.producer.records == [("out.kb", b"k1", b'{"n":1}', None), ("out.kb", b"k2", b'"v2"', None)]
    assert not a.settled and not b.settled and s.bolt.in_flight == 2
    s.bolt.execute(tick_tuple())  # the tick serves the callbacks
    assert s.producer.polls >= 3
    s.producer.deliver(ok=True)
    s.producer.deliver(ok=False)
    assert a.settled and 1 in s.acks.acks and 2 in s.acks.fails  # b's tree fails: the spout replays it
    assert (s.bolt.delivered, s.bolt.delivery_failures, s.bolt.in_flight) == (1, 1, 0)


def test_poison_is_dead_lettered_with_where_and_why_and_acked() -> None:
    s = Sink(KafkaBolt("out", value_serializer="bytes"))
    t = rec(3, ["k", "not bytes"])
    s.bolt.execute(t)
    assert t.settled and 3 in s.acks.acks and not s.producer.records and s.bolt.poison == 1
    (value, key, reason, where) = s.dead[0]
    assert value == b'["k","not bytes"]' and key is None
    assert reason.startswith("KafkaBolt cannot write the tuple: PoisonTupleError: the bytes serializer got a str")
    assert where == {"topic": "squall.kb.sink", "partition": 0, "offset": 3, "attempts": 0}


def test_a_full_queue_is_retried_a_none_topic_skipped_and_fire_and_forget_acks_at_once() -> None:
    s = Sink(KafkaBolt(FieldNameTopicSelector("key"), FieldNameBasedTupleToKafkaMapper(key_field=None, message_field=None), fire_and_forget=True))
    s.producer.full = 2
    t = rec(4, ["topic-a", 7])
    s.bolt.execute(t)
    assert s.producer.records == [("topic-a", None, b'{"key":"topic-a","message":7}', None)] and t.settled and 4 in s.acks.acks
    skipped = rec(5, ["", 1])  # no topic and no default: skipped, acked
    s.bolt.execute(skipped)
    assert skipped.settled and s.bolt.skipped == 1 and len(s.producer.records) == 1


def test_the_sink_topic_and_bad_serializers() -> None:
    assert KafkaBolt("squall.{topology}.out").sink_topic("wc") == "squall.wc.out"
    assert KafkaBolt(FieldNameTopicSelector("t")).sink_topic("wc") is None
    with pytest.raises(TopologyError, match=r"\[sink\] KafkaBolt key_serializer must be one of"):
        KafkaBolt("t", key_serializer="avro").validate("sink")
    assert DefaultTopicSelector("x").topic(None) == "x"


@given(st.recursive(st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c), max_leaves=8))
def test_json_serialization_round_trips(value: Any) -> None:
    import json

    raw = serialize(value, "json")
    assert (raw is None) == (value is None)
    if raw is not None:
        assert json.loads(raw) == value


def test_str_and_bytes_serializers() -> None:
    assert serialize(12, "str") == b"12" and serialize(b"\x00", "bytes") == b"\x00"
    with pytest.raises(PoisonTupleError):
        serialize({1, 2}, "json")
