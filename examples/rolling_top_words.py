"""storm-starter's RollingTopWords on the Shakespeare corpus: the top words of sliding count windows.

    squall run examples/rolling_top_words.py [--input PATH] [--output top.json]

``lines`` (KafkaSpout) -> ``split`` (shuffle; the word count's tokeniser) -> ``rolling``
(global; a :class:`~streams.WindowedBolt` over the last ``LENGTH`` words, every ``INTERVAL``
words). Each window emits ``(window, top)``: its number (1, 2, ...) and its ``TOP`` most
frequent words as ``[word, count]`` pairs, by count, then word. Counts are kept
incrementally from each window's new and expired words, as storm-starter's
RollingCountBolt keeps its sliding counts.

When the input ends (no word for ``IDLE_S`` seconds), the last window fires with what it
holds so far and every word is acked, so ``squall run`` ends. One task per component keeps
the words in input order, so the windows are those of the corpus read in order:
:func:`direct_windows` computes them without Squall (tests/integration/test_windows.py).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from streams import BasicBolt, BasicOutputCollector, Count, KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple, TupleWindow, WindowedBolt

LENGTH, INTERVAL, TOP = 5000, 1000, 10
"""Window: the last 5000 words, every 1000 words; the top 10 words of each."""

IDLE_S = 5.0
"""Seconds without a word after which the input counts as ended."""

WORD = re.compile(r"[a-z']+")


def words(line: str) -> list[str]:
    """The word count's tokeniser: lowercase, then ``[a-z']+``."""
    return WORD.findall(line.lower())


def top(counts: Counter[str], n: int = TOP) -> list[list[Any]]:
    """The ``n`` most frequent words as ``[word, count]``, by count (descending), then word."""
    return [[w, c] for w, c in sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))[:n] if c > 0]


def direct_windows(lines: Iterable[str], length: int = LENGTH, interval: int = INTERVAL) -> dict[str, list[list[Any]]]:
    """The example's output computed directly: ``{window number: top}``.

    Windows end at every ``interval``-th word and hold the last ``length`` words; when the
    input ends, a last window holds the words after ``next end - length`` (what the next
    window would have held), if any arrived since the previous window.
    """
    seq = [w for line in lines for w in words(line)]
    out: dict[str, list[list[Any]]] = {}
    n = 0
    for end in range(interval, len(seq) + 1, interval):
        n += 1
        out[str(n)] = top(Counter(seq[max(0, end - length) : end]))
    if len(seq) % interval:
        next_end = (len(seq) // interval + 1) * interval
        n += 1
        out[str(n)] = top(Counter(seq[max(0, next_end - length) :]))
    return out


class Split(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        for word in words(tuple[0]):
            collector.emit([word])


class RollingTop(WindowedBolt):
    """The top words of each window, from counts kept incrementally."""

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["window", "top"], stream="top")

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.counts: Counter[str] = Counter()
        self.windows = 0

    def execute(self, window: TupleWindow) -> None:
        for t in window.get_new():
            self.counts[t[0]] += 1
        for t in window.get_expired():
            self.counts[t[0]] -= 1
            if not self.counts[t[0]]:
                del self.counts[t[0]]
        self.windows += 1
        self.collector.emit([self.windows, top(self.counts)], stream="top")


def topology() -> Topology:
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 1)
    b.set_bolt("split", Split(), 1).shuffle_grouping("lines")
    b.set_bolt("rolling", RollingTop().with_window(Count(LENGTH), Count(INTERVAL)).with_idle_timeout(IDLE_S), 1).global_grouping("split")
    b.set_output("squall.{topology}.top", "rolling", "top", key_field="window", value_field="top", merge="last")
    return b.create_topology("rolling-top-words", {"topology.workers": 2})
