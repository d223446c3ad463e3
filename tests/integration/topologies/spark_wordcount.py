"""Word count with a SparkBolt split, for the Spark tests.

``batch`` comes from ``SQUALL_TEST_SPARK_BATCH`` (rows | pandas | arrow; default rows). If
``SQUALL_TEST_FLAKY_DIR`` is set, lines whose crc32 % 10 == 0 raise on their first
delivery (a marker file per line, shared by Spark's Python worker processes).
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any

from examples.wordcount import Count, words
from streams import KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple
from streams.spark import SparkBolt


def _first_delivery(line: str) -> bool:
    flaky_dir = os.environ.get("SQUALL_TEST_FLAKY_DIR")
    if not flaky_dir or zlib.crc32(line.encode()) % 10:
        return False
    marker = Path(flaky_dir) / f"{zlib.crc32(line.encode())}-{len(line)}"
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        return True
    except FileExistsError:
        return False


def split(t: Tuple) -> list[Any]:
    line = t[0]
    if _first_delivery(line):
        raise ValueError(f"first delivery of {t.where}")
    return [[w] for w in words(line)]


def split_frame(df: Any) -> Any:
    import pandas as pd

    rows, out = [], []
    for r, line in zip(df["_row"], df["line"], strict=True):
        if _first_delivery(line):
            raise ValueError("first delivery")
        for w in words(line):
            rows.append(r)
            out.append(w)
    return pd.DataFrame({"_row": rows, "word": out})


def split_arrow(table: Any) -> Any:
    import pyarrow as pa

    rows, out = [], []
    for r, line in zip(table.column("_row").to_pylist(), table.column("line").to_pylist(), strict=True):
        if _first_delivery(line):
            raise ValueError("first delivery")
        for w in words(line):
            rows.append(r)
            out.append(w)
    return pa.table({"_row": pa.array(rows, pa.int64()), "word": pa.array(out, pa.string())})


def topology() -> Topology:
    batch = os.environ.get("SQUALL_TEST_SPARK_BATCH", "rows")
    fn = {"rows": split, "pandas": split_frame, "arrow": split_arrow}[batch]
    bolt = SparkBolt(fn, output_fields=["word"], batch=batch)
    builder = TopologyBuilder()
    builder.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 2)
    builder.set_bolt("split", bolt, 2).shuffle_grouping("lines")
    builder.set_bolt("count", Count(), 2).fields_grouping("split", ["word"])
    builder.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    return builder.create_topology("sparkwc", {"topology.workers": 2})
