"""The Shakespeare word count in Storm's Stream API: lines -> words -> (word, 1) -> count by word.

    squall run examples/wordcount_stream.py [--input PATH] [--output counts.json]

It compiles (``StreamBuilder.build``) to the hand-written examples/wordcount.py's shape:
``lines`` (KafkaSpout) -> ``flat_map1`` (shuffle; ``flat_map`` and ``map_to_pair`` fused
into one bolt) -> ``count_by_key2`` (fields grouping on ``key``; a running count per word,
forwarded on each tick and acked once forwarded). The tokeniser is the word count's:
lowercase, then every match of ``[a-z']+``. The output holds each word's latest count.
"""

from __future__ import annotations

import re

from streams import KafkaSpout, RecordTranslator, Topology
from streams.api import StreamBuilder

WORD = re.compile(r"[a-z']+")


def topology() -> Topology:
    b = StreamBuilder()
    lines = b.new_stream(KafkaSpout(translator=RecordTranslator("line")), 2, name="lines")
    counts = lines.flat_map(lambda line: WORD.findall(line.lower())).map_to_pair(lambda w: (w, 1)).count_by_key()
    counts.set_output("squall.{topology}.counts")
    return b.build("wordcount-stream", {"topology.workers": 4, "topology.acker.executors": 1})
