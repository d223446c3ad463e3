"""``python -m bench scale``: how the acked word count scales with workers and with partitions (issue 49).

One fresh one-node Apache Kafka (warmed); on it the acked word count
(``bench/topologies/wordcount_scale.py``: examples/wordcount.py's spout, ``Split`` and ``Count``,
one acker) runs the whole Shakespeare once per size, as ``bench all`` runs ``squall-acked``
(:func:`bench.compare.run_squall`: the input produced as fast as the broker takes it, the output
checked against a direct count):

* ``--workers`` (1, 2, 4) worker processes at ``--at-tasks`` (4) partitions per component;
* ``--tasks`` (2, 4, 8) partitions per component at ``--at-workers`` (2) workers.

Each component runs ``min(workers, tasks)`` executors. Reported per size: records (lines)/s,
CPU microseconds per record (user + system of the workers' process trees over the run, the
broker's not included), the workers' peak RSS, and whether the counts were exact. The machine's
cores bound what more workers can add: the table says how many there were.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import broker, print_table, write_json
from bench.compare import expected, load_input, normalise, run_squall

TOPOLOGY = "../bench/topologies/wordcount_scale.py"
"""The scale topology, relative to examples/ (where :func:`bench.compare.run_squall` looks)."""


def sizes(args: Any) -> list[tuple[int, int]]:
    """``(workers, tasks)`` to run, in order, each once: the workers sweep, then the tasks sweep."""
    out: list[tuple[int, int]] = []
    for size in [(w, args.at_tasks) for w in args.workers] + [(args.at_workers, t) for t in args.tasks]:
        if size not in out:
            out.append(size)
    return out


def run_size(bootstrap: str, workers: int, tasks: int, lines: list[bytes], exp: dict[str, list[int]], workdir: Path, smoke: bool) -> dict[str, Any]:
    """One run of the scale topology at ``workers`` x ``tasks``: the row for its table."""
    os.environ["SQUALL_SCALE_WORKERS"], os.environ["SQUALL_SCALE_TASKS"] = str(workers), str(tasks)
    quiet_s, limit_s = (20.0, 300.0) if smoke else (60.0, 1800.0)
    try:
        row = run_squall(bootstrap, "wordcount", lines, exp, True, None, quiet_s, limit_s, workdir / f"w{workers}t{tasks}", example=TOPOLOGY)
    finally:
        del os.environ["SQUALL_SCALE_WORKERS"], os.environ["SQUALL_SCALE_TASKS"]
    out = {"workers": workers, "tasks": tasks, "executors": min(workers, tasks), "correct": row["correct"], "duplicates": row["duplicates"]}
    out["seconds"] = row["seconds"]
    out["records_per_s"] = len(lines) / row["seconds"] if row["seconds"] > 0 else None
    out["cpu_us_per_record"] = row["cpu_s"] / len(lines) * 1e6
    out["peak_rss_bytes"] = row["peak_rss_bytes"]
    out["p99_s"] = row["p99_s"]
    return out


def run(args: Any) -> dict[str, Any]:
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="squall-bench-scale-"))
    lines = load_input("wordcount", args.smoke)
    exp = normalise("wordcount", expected("wordcount", lines))
    result: dict[str, Any] = {"cores": os.cpu_count(), "lines": len(lines), "rows": []}
    with broker(args.bootstrap, "kafka", args.broker_warmup) as bootstrap:
        for workers, tasks in sizes(args):
            print(f"[bench] scale: {workers} workers x {tasks} partitions ...", file=sys.stderr, flush=True)
            result["rows"].append(run_size(bootstrap, workers, tasks, lines, exp, workdir, args.smoke))
    print_table(
        f"acked word count by size, Apache Kafka ({len(lines):,} lines, {result['cores']} cores)",
        ["workers", "partitions", "executors", "records/s", "CPU us/rec", "peak RSS MB", "p99 s", "correct"],
        [
            [r["workers"], r["tasks"], r["executors"], r["records_per_s"], r["cpu_us_per_record"], r["peak_rss_bytes"] / 1e6, r["p99_s"], r["correct"]]
            for r in result["rows"]
        ],
    )
    write_json(args.json, result)
    return result
