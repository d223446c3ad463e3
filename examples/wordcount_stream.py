"""The Shakespeare word count in Storm's Stream API: lines -> words -> (word, 1) -> count by word.

    squall run examples/wordcount_stream.py [--input PATH] [--output counts.json]

It compiles (``StreamBuilder.build``) to the hand-written examples/wordcount.py's shape:
``lines`` (KafkaSpout, 2 executors) -> ``flat_map1`` (shuffle; 1 executor, as the
hand-written ``split``; ``flat_map`` and ``map_to_pair`` fused into one bolt) ->
``count_by_key2`` (fields grouping on ``key``; 2 executors, as ``count``; a running count per
word, written to the output on each tick, then acked). ``flat_map1`` combines its words per
0.1 s tick: it sends one partial count per word, anchored to the lines it counts, and the
counters add the partials up (docs/stream-api.md, "Combining"). Each ``repartition`` sets the
parallelism of what follows (Storm's only knob); the second one starts no bolt of its own,
since ``count_by_key`` regroups anyway. The tokeniser is the word count's: lowercase, then
every match of ``[a-z']+``. The output holds each word's latest count.
"""

from __future__ import annotations

import re

from streams import KafkaSpout, RecordTranslator, Topology
from streams.api import StreamBuilder

WORD = re.compile(r"[a-z']+")


def topology() -> Topology:
    b = StreamBuilder()
    lines = b.new_stream(KafkaSpout(translator=RecordTranslator("line")), 2, name="lines")
    words = lines.repartition(1).flat_map(lambda line: WORD.findall(line.lower())).map_to_pair(lambda w: (w, 1))
    counts = words.repartition(2).count_by_key()
    counts.set_output("squall.{topology}.counts")
    return b.build("wordcount-stream", {"topology.workers": 4, "topology.acker.executors": 1})
