"""Mistakes are caught while the topology is built, never at run time; the error names the operation (and the field)."""

from __future__ import annotations

import pytest

from streams import Count, Duration, KafkaSpout, RecordTranslator, TopologyBuilder, TopologyError, TransactionalKafkaSpout
from streams.api import StreamBuilder, TumblingWindows
from streams.api.join_bolt import JoinBolt
from streams.trident import Count as TridentCount
from streams.trident import StateFactory, Sum, TridentTopology
from tests.unit.api.helpers import Csv


def test_a_by_key_operation_on_a_stream_that_is_not_a_pair_stream() -> None:
    lines = StreamBuilder().new_stream(KafkaSpout(translator=RecordTranslator("line")))
    for op in ("count_by_key", "reduce_by_key", "group_by_key", "join", "update_state_by_key", "map_values"):
        with pytest.raises(TopologyError, match=rf"^\[{op}\] needs a PairStream of \(key, value\): call map_to_pair or key_by first$"):
            getattr(lines, op)
    assert lines.key_by(len).count_by_key() is not None  # once it is a pair stream, it is fine


def test_a_join_bolt_on_a_field_a_side_does_not_declare() -> None:
    b = TopologyBuilder()
    b.set_spout("flights", KafkaSpout(translator=Csv("carrier", "flight")))
    b.set_spout("airlines", KafkaSpout(translator=Csv("code", "name")))
    joiner = JoinBolt("flights", "carrier").join("airlines", "carrier", "flights").select("flights.flight, airlines.name")
    b.set_bolt("join", joiner.with_tumbling_window(Count(10))).fields_grouping("flights", ["carrier"]).fields_grouping("airlines", ["code"])
    with pytest.raises(TopologyError, match=r"^\[join\] join on field 'carrier' of 'airlines', which declares \['code', 'name'\]$"):
        b.create_topology("t")


def test_a_join_bolt_selecting_a_field_nobody_declares() -> None:
    b = TopologyBuilder()
    b.set_spout("flights", KafkaSpout(translator=Csv("carrier", "flight")))
    b.set_spout("airlines", KafkaSpout(translator=Csv("code", "name")))
    joiner = JoinBolt("flights", "carrier").join("airlines", "code", "flights").select("flights.flight, airlines.country")
    b.set_bolt("join", joiner.with_tumbling_window(Count(10))).fields_grouping("flights", ["carrier"]).fields_grouping("airlines", ["code"])
    with pytest.raises(TopologyError, match=r"^\[join\] select field 'country' of 'airlines'"):
        b.create_topology("t")


def test_a_trident_join_on_a_field_a_side_does_not_have() -> None:
    t = TridentTopology()
    s = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=1))
    words = s.each(["line"], str.split, ["word"])
    with pytest.raises(TopologyError, match=r"^\[join\] field 'carrier' is not in the stream's fields \['line', 'word'\]$"):
        t.join(words, ["carrier"], words.project(["word"]), ["word"], ["word", "line"])


def test_a_window_longer_than_the_message_timeout() -> None:
    b = StreamBuilder()
    s = b.new_stream(KafkaSpout(translator=RecordTranslator("line"))).key_by(len)
    s.window(TumblingWindows.of(Duration(60.0))).count_by_key().set_output("squall.{topology}.out")
    with pytest.raises(TopologyError, match=r"^\[count_by_key2\] its window holds tuples up to 120 s .* topology.message.timeout.secs is 30 s"):
        b.build("w")
    b.build("w", {"topology.message.timeout.secs": 121})  # above it: fine


def test_a_persistent_aggregate_on_a_stream_that_is_not_transactional() -> None:
    t = TridentTopology()
    words = t.new_stream("lines", KafkaSpout(translator=RecordTranslator("line"))).each(["line"], str.split, ["word"])
    with pytest.raises(TopologyError, match=r"^\[persistent_aggregate\] needs a transactional stream: .* got KafkaSpout$"):
        words.group_by(["word"]).persistent_aggregate(StateFactory("counts"), TridentCount(), ["count"])


def test_trident_state_and_aggregator_mistakes() -> None:
    from streams import OpaqueKafkaSpout

    t = TridentTopology()
    words = t.new_stream("lines", OpaqueKafkaSpout(RecordTranslator("line"), partitions=1)).each(["line"], str.split, ["word"])
    with pytest.raises(TopologyError, match=r"^\[persistent_aggregate\] state 'counts' is transactional but the spout is opaque"):
        words.group_by(["word"]).persistent_aggregate(StateFactory("counts", "transactional"), TridentCount(), ["count"])
    with pytest.raises(TopologyError, match=r"^\[group_by\] field 'w' is not in the stream's fields"):
        words.group_by(["w"])
    with pytest.raises(TopologyError, match=r"^\[each\] output fields \['word'\] are already in the stream's fields"):
        words.each(["line"], str.split, ["word"])
    with pytest.raises(TopologyError, match=r"^\[aggregate\] needs a CombinerAggregator, ReducerAggregator or Aggregator"):
        words.aggregate(sum, ["total"])
    words.group_by(["word"]).persistent_aggregate(StateFactory("lengths", "opaque"), Sum(), ["n"], input_fields=["line"])  # right: fine


def test_stream_api_operation_mistakes_name_the_operation() -> None:
    b = StreamBuilder()
    s = b.new_stream(KafkaSpout(translator=RecordTranslator("line")))
    with pytest.raises(TopologyError, match=r"^\[join\] joins within a window: call window\(...\) on this stream first$"):
        s.key_by(len).join(s.key_by(len))
    with pytest.raises(TopologyError, match=r"^\[repartition\] parallelism must be >= 1, got 0$"):
        s.repartition(0)
    s.for_each(print)
    with pytest.raises(TopologyError, match=r"^\[aggregate\] needs a streams.api.CombinerAggregator"):
        s.aggregate(sum)  # type: ignore[arg-type]
