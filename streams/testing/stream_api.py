"""``run_stream``: one Stream API pipeline on a list of values, in the test kit (bytewax's ``testing.run_main`` and ``TestingSource``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from streams.api.stream import Stream, StreamBuilder
from streams.kafka.spout import KafkaSpout, RecordTranslator
from streams.model.tuple import Tuple
from streams.testing.local import run_topology

OUTPUT = "squall.{topology}.run-stream"


def _json_value(t: Tuple) -> Any:
    return json.loads(t.values[0])


def run_stream(build: Callable[[Stream], Stream | None], values: Iterable[Any], *, config: dict[str, Any] | None = None) -> list[Any]:
    """Feed ``values`` (JSON-serialisable) to ``build(stream)`` and return what the stream it returns emits, in order.

    A pair arrives as ``(key, value)``; anything else as it crossed the wire (JSON: a tuple
    is a list). ``build`` may return None (a pipeline that ends in ``for_each``): then ``[]``.
    Raises TopologyError (a wrong pipeline), NotSettledError (trees that never settle).

    >>> run_stream(lambda s: s.map(lambda n: n + 1).filter(lambda n: n % 2 == 0), [1, 2, 3])
    [2, 4]
    """
    builder = StreamBuilder()
    source = builder.new_stream(KafkaSpout(translator=RecordTranslator("value")), name="input", value_mapper=_json_value)
    out = build(source)
    pair = bool(out is not None and out.pair)
    if out is not None:
        if pair:
            out.set_output(OUTPUT, merge="last")
        else:
            out.key_by(_none).set_output(OUTPUT, merge="last")
    result = run_topology(builder.build("run-stream", config), {"input": [json.dumps(v) for v in values]})
    records = result.output_records.get(OUTPUT.replace("{topology}", "run-stream"), [])
    return [(r["key"], r["value"]) if pair else r["value"] for r in records]


def _none(_: Any) -> None:
    return None
