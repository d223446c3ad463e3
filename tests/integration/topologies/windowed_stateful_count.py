"""A stateful windowed word count (issue 26): tumbling windows of 200 words per count task, each fired
window's words added to the task's checkpointed state. The windows themselves live in the state
(StatefulWindowedBolt), so after crashes every word is either counted once or still held in a
window: ``state[word] + held[word] == true count``."""

from __future__ import annotations

from typing import Any

from examples.wordcount_stateful import Split
from streams import KafkaSpout, KeyValueState, RecordTranslator, StatefulWindowedBolt, Topology, TopologyBuilder, TupleWindow
from streams.windowing import Count

WINDOW = 200


class WindowedCount(StatefulWindowedBolt):
    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute(self, window: TupleWindow) -> None:
        for t in window.get_new():
            word = t.get("word")
            self.counts[word] = self.counts.get(word, 0) + 1


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 2)
    b.set_bolt("split", Split(), 1).shuffle_grouping("lines")
    b.set_bolt("count", WindowedCount().with_tumbling_window(Count(WINDOW)), 2, num_tasks=4).fields_grouping("split", ["word"])
    b.set_state_output("count", kind="keyvalue")
    return b.create_topology("windowed-stateful-count", {"topology.workers": 4})


def held_words(items: Any) -> dict[str, int]:
    """Words the checkpointed windows hold (not yet fired), from a store's ``kv_items`` (task, key JSON, value JSON)."""
    import json

    tuples: dict[tuple[int, int], str] = {}
    held: list[tuple[int, int]] = []
    for task, key, value in items:
        k = json.loads(key)
        if isinstance(k, list) and k[1:] == ["window"]:
            held += [(task, ref) for _, _, ref in json.loads(value)["engine"]["entries"]]
        elif isinstance(k, list) and len(k) == 3 and k[1] == "window":
            tuples[(task, k[2])] = json.loads(value)[0][0]
    out: dict[str, int] = {}
    for ref in held:
        out[tuples[ref]] = out.get(tuples[ref], 0) + 1
    return out
