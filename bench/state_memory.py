"""``python -m bench state-memory [--minutes M]``: does a stateful bolt's memory stay bounded at full speed? (issue 51)

A fresh one-node Apache Kafka and one ``squall serve`` on it run the stateful word count
(examples/wordcount_stateful.py: ``count`` is a StatefulBolt, 4 tasks on 2 executors, each
task keeping the ids of the tuples it applied for ``squall.state.dedupe.retention.secs``, 600 s)
for ``--minutes``, fed as fast as it reads: the Shakespeare lines are produced ahead of the
spout's committed offsets by up to ``--lead`` lines, so the topology never waits for input and
the feeder costs little CPU. Every ``--every`` seconds it samples the resident memory (RSS) of
each worker that runs a ``count`` executor, and the lines the spout committed (acked).

Reported: per count worker, its RSS first, highest and last, and its slope over the last third
of the run (MB/min, least squares: after the retention's 10 minutes the ids forgotten balance
the ids added); the acked lines/s per minute. Bounded means a slope near 0 and at most
``--limit-mb`` (500) per count worker.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from bench.common import print_table, stop_process, write_json
from bench.compare import CACHE
from bench.feeder import produce
from bench.soak import rss_bytes, slope_per_min
from service.brokers import ApacheKafka, free_port
from service.control import WorkerPlan
from service.run import read_lines, shakespeare_texts
from streams.wire import component_group

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "wordcount_stateful.py"
NAME = "wcs"
SPOUT = "lines"
PARTITIONS = 2
"""The example's spout parallelism: its input topic's partitions."""


def count_workers(root: int, component: str = "count") -> dict[int, int]:
    """``pid -> worker index`` of the workers under ``root`` whose plan gives them an executor of ``component``."""
    out: dict[int, int] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            todo += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:
            continue
        if b"service.worker" in argv:
            at = argv.index(b"service.worker")
            plan, index = WorkerPlan.read(argv[at + 1].decode()), int(argv[at + 2])
            if any(e.component == component for e in plan.workers[index]):
                out[pid] = index
    return out


class Lead:
    """The spout's committed offsets (summed over its partitions), read with the spout's own group."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": component_group(NAME, SPOUT), "enable.auto.commit": False, "log_level": 0})
        self.parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]

    def committed(self) -> int:
        """Lines the spout committed (every tree of them complete), 0 before the first commit."""
        try:
            return sum(max(tp.offset, 0) for tp in self.consumer.committed(self.parts, timeout=10))
        except Exception:  # the group's coordinator moving: try again at the next sample
            return -1

    def close(self) -> None:
        self.consumer.close()


def run(args: Any) -> dict[str, Any]:
    """Serve on a fresh Apache Kafka, submit, feed ahead of the spout for ``--minutes``, sample; print the table and return (and write) the JSON."""
    workdir = Path(tempfile.mkdtemp(prefix="squall-bench-state-memory-"))
    topic = f"squall.{NAME}.{SPOUT}"
    with ApacheKafka(nodes=1, workdir=workdir / "kafka") as kafka:
        env = {**os.environ, "SQUALL_DATA_DIR": str(workdir / "data"), "SQUALL_LOG_LEVEL": "WARNING", "SQUALL_BOOTSTRAP_SERVERS": kafka.bootstrap}
        env.pop("SQUALL_CONFIG", None)
        log = (workdir / "serve.log").open("w")
        serve = subprocess.Popen(["squall", "serve", "--http-port", str(free_port())], env=env, stdout=subprocess.DEVNULL, stderr=log)
        stop = threading.Event()
        fed = [0]
        samples: list[dict[str, Any]] = []
        lead = Lead(kafka.bootstrap, topic)
        try:
            subprocess.run(["squall", "submit", str(EXAMPLE), "--name", NAME], env=env, check=True, capture_output=True)
            lines = list(read_lines(shakespeare_texts(CACHE)))
            chunk = lines[:20_000]
            acked = [0]

            def feed() -> None:
                while not stop.is_set():
                    if fed[0] - acked[0] >= args.lead:
                        time.sleep(0.5)
                        continue
                    fed[0] += produce(kafka.bootstrap, topic, chunk, wrap=False, partitions=PARTITIONS)

            threading.Thread(target=feed, name="state-memory-feed", daemon=True).start()
            start = time.monotonic()
            while (elapsed := time.monotonic() - start) < args.minutes * 60:
                done = lead.committed()
                if done >= 0:
                    acked[0] = done
                workers = count_workers(serve.pid)
                rss = {str(index): rss_bytes([pid]) for pid, index in sorted(workers.items(), key=lambda kv: kv[1])}
                samples.append({"t_s": elapsed, "acked_lines": acked[0], "fed_lines": fed[0], "count_rss_bytes": rss})
                shown = ", ".join(f"w{i} {b / 2**20:6.1f} MB" for i, b in rss.items())
                print(f"[state-memory] {elapsed:6.0f} s: acked {acked[0]:>10,} lines, count workers {shown}", flush=True)
                time.sleep(args.every)
        finally:
            stop.set()
            lead.close()
            stop_process(serve)
            log.close()
    return report(args, samples)


def report(args: Any, samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The table and the JSON of a run's samples."""
    late = [s for s in samples if s["t_s"] >= args.minutes * 40]
    rows, workers = [], {}
    for w in sorted({w for s in samples for w in s["count_rss_bytes"]}):
        series = [(s["t_s"], s["count_rss_bytes"][w] / 2**20) for s in samples if w in s["count_rss_bytes"]]
        tail = [(t, v) for t, v in series if t >= args.minutes * 40]
        slope = slope_per_min(tail)
        highest = max(v for _, v in series)
        workers[w] = {"first_mb": series[0][1], "max_mb": highest, "last_mb": series[-1][1], "slope_mb_per_min_last_third": slope}
        verdict = "yes" if highest <= args.limit_mb and abs(slope) <= args.flat_mb_per_min else "NO"
        rows.append([f"count worker {w}", f"{series[0][1]:,.1f}", f"{highest:,.1f}", f"{series[-1][1]:,.1f}", f"{slope:+,.2f}", verdict])
    print_table(
        f"state-memory: Apache Kafka, {NAME} (stateful word count) at full speed for {args.minutes:g} min",
        ["worker", "first MB", "max MB", "last MB", "MB/min (last third)", f"<= {args.limit_mb:g} MB and flat"],
        rows,
    )
    per_minute = []
    for m in range(int(args.minutes)):
        inside = [s for s in samples if m * 60 <= s["t_s"] < (m + 1) * 60 + args.every]
        if len(inside) >= 2:
            a, b = inside[0], inside[-1]
            per_minute.append((b["acked_lines"] - a["acked_lines"]) / max(b["t_s"] - a["t_s"], 1e-9))
    print("acked lines/s per minute: " + ", ".join(f"{r:,.0f}" for r in per_minute))
    rate = (late[-1]["acked_lines"] - late[0]["acked_lines"]) / (late[-1]["t_s"] - late[0]["t_s"]) if len(late) >= 2 else 0.0
    result = {
        "minutes": args.minutes,
        "lead_lines": args.lead,
        "limit_mb": args.limit_mb,
        "acked_lines_per_s_last_third": rate,
        "acked_lines_per_s_per_minute": per_minute,
        "workers": workers,
        "samples": samples,
    }
    write_json(args.json, result)
    return result
