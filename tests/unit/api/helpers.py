"""Two-input runs of the Stream API in the test kit (``run_stream`` takes one input)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from streams import KafkaSpout, RecordTranslator
from streams.api import PairStream, StreamBuilder
from streams.model.tuple import Tuple
from streams.testing import run_topology


class Csv(RecordTranslator):
    """A spout's record as CSV fields with the given names."""

    def __init__(self, *fields: str) -> None:
        super().__init__()
        self.names = fields

    def streams(self) -> dict[str, tuple[str, ...]]:
        return {"default": self.names}

    def translate(self, msg: Any) -> tuple[str, list[Any]] | None:
        return "default", msg.value().decode().split(",")


def json_value(t: Tuple) -> Any:
    return json.loads(t.values[0])


def run_two(build: Callable[[PairStream, PairStream], PairStream], left: list[list[Any]], right: list[list[Any]]) -> list[tuple[Any, Any]]:
    """Feed ``left`` and ``right`` pairs to two pair streams; what ``build``'s stream emits, as ``(key, value)``."""
    b = StreamBuilder()
    ls = b.new_stream(KafkaSpout(translator=RecordTranslator("v")), name="left", value_mapper=json_value).map_to_pair(tuple)
    rs = b.new_stream(KafkaSpout(translator=RecordTranslator("v")), name="right", value_mapper=json_value).map_to_pair(tuple)
    build(ls, rs).set_output("squall.{topology}.out")
    result = run_topology(b.build("two"), {"left": [json.dumps(p) for p in left], "right": [json.dumps(p) for p in right]})
    return [(r["key"], r["value"]) for r in result.output_records.get("squall.two.out", [])]
