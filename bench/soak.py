"""``python -m bench soak [--minutes M] [--rate R]``: does Squall run for months? The broker's disk and the processes' memory under a steady feed (issue 51).

A fresh one-node Apache Kafka and one ``squall serve`` on it run the word count
(examples/wordcount.py) while the Shakespeare lines are fed at ``--rate`` lines/s for
``--minutes``. Every ``--every`` seconds it samples the broker's data dir (bytes on disk, the
``du`` of its log dirs) and the resident memory of the supervisor and its workers. Reported: the
growth rate of each (MB/min, by a least-squares line over the second half of the run, once the
first segments rolled and the first retention checks ran), the input rate in MB/min, and the
samples. A bounded run shows a disk that follows the consumer lag and flat memory.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import print_table, stop_process, write_json
from bench.compare import CACHE
from bench.feeder import produce
from service.brokers import ApacheKafka, free_port
from service.run import read_lines, shakespeare_texts

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "wordcount.py"
NAME = "wc"


def disk_bytes(path: Path) -> int:
    """Bytes on disk under ``path`` (allocated blocks, as ``du`` counts them: Kafka's preallocated indexes are sparse)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except FileNotFoundError:  # a segment deleted while walking
                continue
    return total


def rss_bytes(pids: list[int]) -> int:
    """The summed resident memory of ``pids`` (from /proc; a pid gone counts 0)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def family(pid: int) -> list[int]:
    """``pid`` and its descendants (the supervisor and its workers)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            todo += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except FileNotFoundError:
            continue
    return out


def slope_per_min(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of ``(seconds, value)`` points, per minute.

    >>> round(slope_per_min([(0.0, 0.0), (60.0, 10.0), (120.0, 20.0)]), 6)
    10.0
    """
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    return 60.0 * sum((t - mx) * (v - my) for t, v in points) / var if var else 0.0


def run(args: Any) -> dict[str, Any]:
    """Serve on a fresh Apache Kafka, submit, feed for ``--minutes``, sample; print the table and return (and write) the JSON."""
    workdir = Path(tempfile.mkdtemp(prefix="squall-bench-soak-"))
    with ApacheKafka(nodes=1, workdir=workdir / "kafka") as kafka:
        http_port = free_port()
        env = {**os.environ, "SQUALL_DATA_DIR": str(workdir / "data"), "SQUALL_LOG_LEVEL": "WARNING", "SQUALL_BOOTSTRAP_SERVERS": kafka.bootstrap}
        env.pop("SQUALL_CONFIG", None)
        log = (workdir / "serve.log").open("w")
        serve = subprocess.Popen(["squall", "serve", "--http-port", str(http_port)], env=env, stdout=subprocess.DEVNULL, stderr=log)
        stop = threading.Event()
        fed = [0]
        try:
            subprocess.run(["squall", "submit", str(EXAMPLE), "--name", NAME], env=env, check=True, capture_output=True)
            lines = list(read_lines(shakespeare_texts(CACHE)))
            line_bytes = sum(len(line) for line in lines[:2000]) / 2000

            def feed() -> None:
                while not stop.is_set():
                    fed[0] += produce(kafka.bootstrap, f"squall.{NAME}.lines", lines[:2000], wrap=False, rate=args.rate, partitions=2)

            threading.Thread(target=feed, name="soak-feed", daemon=True).start()
            start = time.monotonic()
            samples: list[dict[str, float]] = []
            while (elapsed := time.monotonic() - start) < args.minutes * 60:
                samples.append({"t_s": elapsed, "disk_bytes": float(disk_bytes(workdir / "kafka")), "rss_bytes": float(rss_bytes(family(serve.pid)))})
                disk_mb, rss_mb = samples[-1]["disk_bytes"] / 2**20, samples[-1]["rss_bytes"] / 2**20
                print(f"[soak] {elapsed:6.0f} s: disk {disk_mb:8.1f} MB, squall rss {rss_mb:7.1f} MB", flush=True)
                time.sleep(args.every)
        finally:
            stop.set()
            stop_process(serve)
            log.close()
    late = [s for s in samples if s["t_s"] >= args.minutes * 30]
    disk_rate = slope_per_min([(s["t_s"], s["disk_bytes"] / 2**20) for s in late])
    rss_rate = slope_per_min([(s["t_s"], s["rss_bytes"] / 2**20) for s in late])
    input_rate = args.rate * line_bytes * 60 / 2**20
    rows = [
        ["broker data dir", f"{samples[0]['disk_bytes'] / 2**20:,.1f}", f"{samples[-1]['disk_bytes'] / 2**20:,.1f}", f"{disk_rate:+,.2f}"],
        ["squall (supervisor + workers) RSS", f"{samples[0]['rss_bytes'] / 2**20:,.1f}", f"{samples[-1]['rss_bytes'] / 2**20:,.1f}", f"{rss_rate:+,.2f}"],
        ["input lines", "-", f"{fed[0]:,} lines", f"{input_rate:+,.2f}"],
    ]
    print_table(
        f"soak: Apache Kafka, {NAME} fed at {args.rate:,.0f} lines/s for {args.minutes:g} min (growth over the second half)",
        ["what", "first MB", "last MB", "MB/min"],
        rows,
    )
    result = {
        "rate": args.rate,
        "minutes": args.minutes,
        "disk_mb_per_min": disk_rate,
        "rss_mb_per_min": rss_rate,
        "input_mb_per_min": input_rate,
        "samples": samples,
    }
    write_json(args.json, result)
    return result
