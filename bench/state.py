"""``python -m bench state``: what a committer's state transaction costs per batch, on SQLite and PostgreSQL.

The exactly-once word count's commits without the rest of the topology: the Shakespeare lines
in batches of ``--batch-lines`` (the example's 2 source partitions x ``squall.batch.records``
1,000), each batch's words counted per count task (4 tasks, by a hash of the word, as the
fields grouping spreads them), and each task's counts applied in txid order with
:meth:`streams.state.TransactionalState.apply`, one database transaction per batch and task,
as ``CountCommitter.finish_batch`` does. Stores as shipped: SQLite in WAL mode with
``synchronous=FULL``, and a throw-away PostgreSQL (``fsync=on``) unless ``--postgres URL``.

Per store it prints the commits, the keys written, the wall time of one commit (p50, p99 and
the mean), the time and the CPU per key written, and checks that the stored counts equal the
words counted.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from bench.common import print_table, write_json
from bench.compare import CACHE
from examples.wordcount import words
from service.brokers import local_postgres
from service.run import read_lines, shakespeare_texts
from streams.state import TransactionalState, open_backend

TASKS = 4
"""The count bolt's tasks in ``examples/wordcount_exactly_once.py``."""


def batches(lines: list[bytes], batch_lines: int) -> Iterator[list[Counter[str]]]:
    """Each batch's word counts per count task."""
    for i in range(0, len(lines), batch_lines):
        per_task: list[Counter[str]] = [Counter() for _ in range(TASKS)]
        for line in lines[i : i + batch_lines]:
            for w in words(line.decode("utf-8", "replace")):
                per_task[zlib.crc32(w.encode()) % TASKS][w] += 1
        yield per_task


def measure(url: str, lines: list[bytes], batch_lines: int, name: str) -> dict[str, Any]:
    """Apply every batch to ``url``'s store; the commits' times and whether the counts came out exact."""
    backend = open_backend(url)
    try:
        states = [TransactionalState(backend, name, writer=f"count:{t}", epoch=1) for t in range(TASKS)]
        walls: list[float] = []
        cpu = 0.0
        written = 0
        expected: Counter[str] = Counter()
        for txid, per_task in enumerate(batches(lines, batch_lines), start=1):
            for state, counts in zip(states, per_task, strict=True):
                expected.update(counts)
                c0, w0 = time.thread_time(), time.perf_counter()
                result = state.apply(txid, counts.items())
                walls.append(time.perf_counter() - w0)
                cpu += time.thread_time() - c0
                written += result.written
        exact = states[0].items() == dict(expected)
        total = sum(walls)
        q = statistics.quantiles(walls, n=100)
        return {
            "commits": len(walls),
            "keys_written": written,
            "p50_ms": q[49] * 1e3,
            "p99_ms": q[98] * 1e3,
            "mean_ms": total / len(walls) * 1e3,
            "us_per_key": total / written * 1e6,
            "cpu_us_per_key": cpu / written * 1e6,
            "exact": exact,
        }
    finally:
        backend.close()


@contextmanager
def postgres(url: str | None) -> Iterator[str]:
    """``url``, or a throw-away server with ``fsync`` on."""
    if url:
        with nullcontext(url) as given:
            yield given
        return
    with local_postgres(fsync=True) as started:
        yield started


def run(args: Any) -> None:
    lines = list(read_lines(shakespeare_texts(CACHE)))[: args.lines]
    name = f"bench_state_{int(time.time())}"
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="squall-bench-state-") as tmp:
        rows["sqlite"] = measure(f"sqlite:///{Path(tmp) / 'state.db'}", lines, args.batch_lines, name)
    if "postgres" in args.stores:
        with postgres(args.postgres) as url:
            rows["postgresql"] = measure(url, lines, args.batch_lines, name)
    print_table(
        f"state commits: {len(lines):,} lines in batches of {args.batch_lines:,}, {TASKS} committer tasks",
        ["store", "commits", "keys written", "p50 ms", "p99 ms", "mean ms", "us/key", "CPU us/key", "exact"],
        [[k, *(r[c] for c in ("commits", "keys_written", "p50_ms", "p99_ms", "mean_ms", "us_per_key", "cpu_us_per_key", "exact"))] for k, r in rows.items()],
    )
    write_json(args.json, {"lines": len(lines), "batch_lines": args.batch_lines, "stores": rows})
