"""A committer SparkBolt: word counts kept in a transactional state (the micro-batch id is the txid).

``SQUALL_TEST_STATE_DB`` names the SQLite file. If ``SQUALL_TEST_CRASH_DIR`` is set, the
first commit of a batch that holds ``line`` tuples raises *after* its state is written
(once: a marker file), so the query dies between the state write and Spark's commit log;
the restarted query re-runs that batch with the same id, and its writes must be skipped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from examples.wordcount import words
from streams import KafkaSpout, RecordTranslator, Topology, TopologyBuilder, Tuple
from streams.spark import SparkBolt
from streams.spark.committer import SparkCommitter
from streams.state import ApplyResult, TransactionalState, open_backend


class CrashOnceState(TransactionalState):
    """Raises once, right after the first state write with txid >= 1 is durable."""

    def apply_folded(self, txid: int, folded: dict[str, Any]) -> ApplyResult:
        result = super().apply_folded(txid, folded)
        crash_dir = os.environ.get("SQUALL_TEST_CRASH_DIR")
        if crash_dir and txid >= 1 and result.written:
            try:
                os.close(os.open(Path(crash_dir) / "crashed", os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                return result
            raise RuntimeError(f"injected crash after writing txid {txid}")
        return result


def count(t: Tuple) -> list[Any]:
    return [[w, 1] for w in words(t[0])]


def topology() -> Topology:
    state = CrashOnceState(open_backend(f"sqlite:///{Path(os.environ.get('SQUALL_TEST_STATE_DB', 'state.db')).resolve()}"), "counts")
    builder = TopologyBuilder()
    builder.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 2)
    builder.set_bolt("count", SparkBolt(count, output_fields=["word", "n"], committer=SparkCommitter(state)), 2).shuffle_grouping("lines")
    return builder.create_topology("sparkcommit", {"topology.workers": 1, "topology.message.timeout.secs": 180, "squall.spark.max.offsets.per.trigger": 500})
