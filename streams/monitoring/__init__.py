"""What executors publish and who reads it.

Stats snapshots and histograms, the spout's durable ledger and its store, and the board that
folds the stats topic.

Imports :mod:`streams.kafka` and below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.lazy import lazy_exports

if TYPE_CHECKING:
    from streams.monitoring.board import StatsBoard
    from streams.monitoring.spout_ledger import TaskLedger
    from streams.monitoring.stats import ExecutorStats, LogHistogram
    from streams.monitoring.trace import Tracer, decode_batch

__all__ = ["ExecutorStats", "LogHistogram", "StatsBoard", "TaskLedger", "Tracer", "decode_batch"]

__getattr__ = lazy_exports(
    __name__,
    {
        "ExecutorStats": "streams.monitoring.stats",
        "LogHistogram": "streams.monitoring.stats",
        "StatsBoard": "streams.monitoring.board",
        "TaskLedger": "streams.monitoring.spout_ledger",
        "Tracer": "streams.monitoring.trace",
        "decode_batch": "streams.monitoring.trace",
    },
)
