"""DelegatingBolt: the bolts that wrap a bolt forward its declaration and checks from one base (issue 47)."""

from __future__ import annotations

import pytest

from streams import BasicBolt, Duration, OutputFieldsDeclarer, StatefulBolt, TopologyError, WindowedBolt
from streams.config import TopologyConfig
from streams.model.bolt import BasicBoltExecutor, DelegatingBolt
from streams.model.stateful import StatefulBoltExecutor
from streams.model.windowed import WindowedBoltExecutor
from streams.transactional.coordinated_bolt import CoordinatedBolt


class Inner(BasicBolt):
    needs_real_kafka = "it says so"

    def __init__(self) -> None:
        self.validated: list[str] = []

    def validate(self, component_id: str) -> None:
        self.validated.append(component_id)

    def validate_conf(self, component_id: str, conf: TopologyConfig) -> None:
        if conf.message_timeout_secs < 5:
            raise TopologyError(f"[{component_id}] too short")

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["word"])

    def get_component_configuration(self) -> dict[str, object]:
        return {"topology.tick.tuple.freq.secs": 7}

    def sink_topic(self, topology: str) -> str | None:
        return f"{topology}.out"


@pytest.mark.parametrize("wrap", [BasicBoltExecutor, lambda b: CoordinatedBolt(b, committer=False)])
def test_a_wrapper_forwards_declaration_checks_and_topics(wrap: object) -> None:
    inner = Inner()
    outer = wrap(inner)  # type: ignore[operator]
    assert isinstance(outer, DelegatingBolt)
    outer.validate("split")
    assert inner.validated == ["split"]
    with pytest.raises(TopologyError, match=r"\[split\] too short"):
        outer.validate_conf("split", TopologyConfig.model_validate({"topology.message.timeout.secs": 1}))
    d = OutputFieldsDeclarer("split")
    outer.declare_output_fields(d)
    assert d.streams["default"].fields == ("word",)
    assert outer.get_component_configuration() == {"topology.tick.tuple.freq.secs": 7}
    assert outer.sink_topic("t") == "t.out"
    assert outer.own_topics("t", "split", 3) == {"t.out": 1}
    assert outer.needs_real_kafka == "it says so"


def test_the_stateful_and_windowed_executors_are_delegating_bolts_that_add_their_own() -> None:
    class Count(StatefulBolt):
        def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
            declarer.declare(["word", "count"])

    class Win(WindowedBolt):
        def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
            declarer.declare(["n"])

    stateful = StatefulBoltExecutor(Count())
    windowed = WindowedBoltExecutor(Win().with_tumbling_window(Duration(2.0)))
    assert isinstance(stateful, DelegatingBolt) and isinstance(windowed, DelegatingBolt)
    conf = stateful.get_component_configuration()
    assert conf is not None and "topology.tick.tuple.freq.secs" in conf  # its checkpoint tick, added to the inner's
    d = OutputFieldsDeclarer("count")
    stateful.declare_output_fields(d)
    assert d.streams["default"].fields == ("word", "count")
    windowed.validate("win")
    assert windowed.sink_topic("t") is None and windowed.needs_real_kafka is None
