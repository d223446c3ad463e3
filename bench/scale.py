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

Then, with ``--per-component`` (on by default), one run with each component in a worker of its
own (4 workers, 4 partitions, one executor each: the spout, ``split``, ``count`` and the acker,
dealt round-robin): each worker's CPU is one hop kind's, per tuple it took in (lines for the spout
and ``split``, words for ``count``, acker ops for the acker) and per line. This is what
docs/capacity.md builds its model on; bytes per line on the broker come from the same run. Beside
them, over the whole run (start and stop included): the CPU of the Apache Kafka broker and of the
bench's own process (it produces the input and reads the output).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import broker, print_table, write_json
from bench.compare import expected, load_input, normalise, run_squall
from bench.procs import cpu_seconds, descendants
from streams.wire import ACKER_COMPONENT

TOPOLOGY = "../bench/topologies/wordcount_scale.py"
"""The scale topology, relative to examples/ (where :func:`bench.compare.run_squall` looks)."""


def sizes(args: Any) -> list[tuple[int, int]]:
    """``(workers, tasks)`` to run, in order, each once: the workers sweep, then the tasks sweep."""
    out: list[tuple[int, int]] = []
    for size in [(w, args.at_tasks) for w in args.workers] + [(args.at_workers, t) for t in args.tasks]:
        if size not in out:
            out.append(size)
    return out


def broker_cpu() -> float:
    """CPU seconds used so far by the Apache Kafka JVMs this process started (``java`` below it)."""
    total = 0.0
    for pid in descendants(os.getpid()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                total += cpu_seconds(pid) or 0.0
        except OSError:
            continue
    return total


def run_size(
    bootstrap: str, workers: int, tasks: int, lines: list[bytes], exp: dict[str, list[int]], workdir: Path, smoke: bool, executors: int | None = None
) -> dict[str, Any]:
    """One run of the scale topology at ``workers`` x ``tasks`` (``executors`` per component, default ``min`` of the two): the row for its table."""
    executors = executors or min(workers, tasks)
    env = {"SQUALL_SCALE_WORKERS": str(workers), "SQUALL_SCALE_TASKS": str(tasks), "SQUALL_SCALE_EXECUTORS": str(executors)}
    os.environ.update(env)
    quiet_s, limit_s = (20.0, 300.0) if smoke else (60.0, 1800.0)
    brokers_from, bench_from = broker_cpu(), time.process_time()
    try:
        row = run_squall(bootstrap, "wordcount", lines, exp, True, None, quiet_s, limit_s, workdir / f"w{workers}t{tasks}e{executors}", example=TOPOLOGY)
    finally:
        for key in env:
            del os.environ[key]
    out = {"workers": workers, "tasks": tasks, "executors": executors, "correct": row["correct"], "duplicates": row["duplicates"]}
    out["broker_cpu_s"] = broker_cpu() - brokers_from
    out["bench_cpu_s"] = time.process_time() - bench_from
    out["seconds"] = row["seconds"]
    out["records_per_s"] = len(lines) / row["seconds"] if row["seconds"] > 0 else None
    out["cpu_us_per_record"] = row["cpu_s"] / len(lines) * 1e6
    out["peak_rss_bytes"] = row["peak_rss_bytes"]
    out["p99_s"] = row["p99_s"]
    out["bytes_per_record"] = row["produced_bytes"] / len(lines)
    out["acker_ops"] = row["acker_ops"]
    out["trees"] = row["trees"]
    out["by_worker"] = row["workers"]
    return out


HOP_FIELDS = ("component", "tuples_in", "cpu_s", "cpu_us_per_tuple", "cpu_us_per_line", "lines_per_cpu_s")


PER_COMPONENT_SMOKE_LINES = 5_000
"""Lines of the smoke test's one-component-per-worker run: at 300, a worker's CPU could round to 0 in /proc's ticks."""


def per_component(row: dict[str, Any], lines: int, words: int) -> list[dict[str, Any]]:
    """Each hop kind's CPU from a run with one component per worker: per tuple it took in, per line, and lines per CPU second."""
    took_in = {"lines": lines, "split": lines, "count": words, ACKER_COMPONENT: row["acker_ops"]}
    out = []
    for worker in row["by_worker"]:
        (component,) = worker["components"]
        cpu = worker["cpu_s"]
        out.append(
            {
                "component": component,
                "tuples_in": took_in[component],
                "cpu_s": cpu,
                "cpu_us_per_tuple": cpu / took_in[component] * 1e6 if took_in[component] else None,
                "cpu_us_per_line": cpu / lines * 1e6,
                "lines_per_cpu_s": lines / cpu if cpu > 0 else None,
            }
        )
    return out


def run(args: Any) -> dict[str, Any]:
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="squall-bench-scale-"))
    lines = load_input("wordcount", args.smoke)
    exp = normalise("wordcount", expected("wordcount", lines))
    result: dict[str, Any] = {"cores": os.cpu_count(), "lines": len(lines), "rows": []}
    if sizes(args):
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
    if args.per_component:
        print("[bench] scale: one component per worker ...", file=sys.stderr, flush=True)
        if args.smoke:  # enough input that each worker's CPU shows in /proc's 10 ms ticks
            lines = load_input("wordcount", False)[:PER_COMPONENT_SMOKE_LINES]
            exp = normalise("wordcount", expected("wordcount", lines))
        with broker(args.bootstrap, "kafka", args.broker_warmup) as bootstrap:
            row = run_size(bootstrap, 4, 4, lines, exp, workdir, args.smoke, executors=1)
        words = sum(v[0] for v in exp.values())
        result["per_component"] = {"run": row, "lines": len(lines), "words": words, "hops": per_component(row, len(lines), words)}
        rest = {"broker (Apache Kafka)": row["broker_cpu_s"], "bench (feeder and checker)": row["bench_cpu_s"]}
        result["per_component"]["outside"] = {k: {"cpu_s": v, "cpu_us_per_line": v / len(lines) * 1e6} for k, v in rest.items()}
        print_table(
            f"one component per worker: CPU per hop kind ({len(lines):,} lines, {words:,} words, {row['acker_ops']:,} acker ops, "
            f"{row['bytes_per_record']:,.0f} B a line on the broker; {row['records_per_s']:,.0f} lines/s, correct: {row['correct']})",
            ["component", "tuples in", "CPU s", "CPU us/tuple", "CPU us/line", "lines per CPU s"],
            [[h[k] for k in HOP_FIELDS] for h in result["per_component"]["hops"]]
            + [[k, None, v, None, v / len(lines) * 1e6, len(lines) / v if v > 0 else None] for k, v in rest.items()],
        )
    write_json(args.json, result)
    return result
