"""Reliable word count with a Spark Structured Streaming bolt:
lines -> split (SparkBolt, shuffle) -> count (Python bolt, fields on "word").

Same contract as ``examples/wordcount.py`` (same tokeniser, same output), but ``split``
runs as a PySpark query: it reads its input topic with the ``squall-kafka`` source,
splits each line in Spark's Python workers, anchors every word to its line with fresh
edge ids, and acks the lines from the driver once a micro-batch's words are durable.

    squall run examples/wordcount_spark.py [--input PATH] [--output counts.json]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # Spark's Python workers load this file too

from wordcount import Count, words

from streams import KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple
from streams.spark import SparkBolt


def split(line: Tuple) -> list[Any]:
    """One ``[word]`` per word of the line (the tokeniser of examples/wordcount.py)."""
    return [[w] for w in words(line[0])]


def topology() -> Topology:
    builder = TopologyBuilder()
    builder.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 2)
    builder.set_bolt("split", SparkBolt(split, output_fields=["word"]), 2).shuffle_grouping("lines")
    builder.set_bolt("count", Count(), 2).fields_grouping("split", ["word"])
    builder.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    # A micro-batch bolt acks a whole batch at once, seconds apart: by Little's law the spout
    # carries at most (trees in flight) / (complete latency). The adaptive bound aims at 1 s of
    # complete latency, which a micro-batch bolt exceeds, so set a fixed bound, as Storm advises
    # for batching bolts (`python -m bench spark`, 2026-11-30: 5,000 per spout task carried 6,600
    # lines/s, 20,000 about 14,000, 40,000 about 16,000; complete latency grows with it).
    conf: dict[str, object] = {"topology.workers": 3, "topology.acker.executors": 1, "topology.max.spout.pending": 40000}
    # Spark's side, sized for a driver that shares a 2-core host with Squall's workers (same
    # bench): one task slot, so three Python workers (read, split, write) instead of six, at the
    # same throughput; a 512 MB heap with the serial collector, growing from 32 MB (the JVM's peak
    # went from 534 to about 420 MB); Arrow batches of 2,048 rows between the JVM and Python.
    conf |= {
        "spark.master": "local[1]",
        "spark.driver.memory": "512m",
        "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -Xms32m",
        "spark.sql.execution.arrow.maxRecordsPerBatch": 2048,
    }
    return builder.create_topology("wordcount_spark", conf)
