"""``python -m bench soak [--minutes M] [--rate R] [--update-at MINUTE]``: does Squall run for months? (issue 51).

The broker's disk and the processes' memory under a steady feed, and a code update in the middle.

A fresh one-node Apache Kafka and one ``squall serve`` on it run the word count
(examples/wordcount.py) while the Shakespeare lines are fed at ``--rate`` lines/s for
``--minutes``. Every ``--every`` seconds it samples the broker's data dir (bytes on disk, the
``du`` of its log dirs), the resident memory of each process (the supervisor, each worker by its
index, the broker's JVM), and the topology's stats (trees acked, replays, the spouts' complete
latency histograms). With ``--update-at``, ``squall update`` rolls a new version of the word
count's code (the same shape) onto it at that minute. Reported: the growth rate of the disk and of
every process's RSS (MB/min, by a least-squares line over the second half of the run, once the
first segments rolled and the first retention checks ran), the acked trees per minute, the
replays, the complete latency's p99 per minute and over the update, and the samples. A bounded
run shows a disk that follows the consumer lag and flat memory.
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
from streams.monitoring import LogHistogram, StatsBoard

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


def process_name(pid: int) -> str:
    """``supervisor``, ``worker wN`` (from ``python -m service.worker PLAN N``), ``broker`` (a JVM) or the command."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return "gone"
    if "service.worker" in argv:
        return f"worker w{argv[argv.index('service.worker') + 2]}"
    if any(a.endswith("java") for a in argv[:1]):
        return "broker"
    return "supervisor" if "serve" in argv else Path(argv[0]).name


def rss_by_process(pids: list[int]) -> dict[str, float]:
    """Resident bytes per :func:`process_name`."""
    out: dict[str, float] = {}
    for pid in pids:
        name = process_name(pid)
        if name != "gone":
            out[name] = out.get(name, 0.0) + rss_bytes([pid])
    return out


def spout_stats(board: StatsBoard) -> tuple[float, float, LogHistogram]:
    """Trees acked, replays, and every spout executor's complete latency histogram merged (stopped executors' too: cumulative)."""
    board.read_to_now()
    hist = LogHistogram()
    for s in board.latest.values():
        if s["kind"] == "spout" and "complete_latency" in s["hists"]:
            hist.merge(LogHistogram.from_json(s["hists"]["complete_latency"]))
    return board.total("spout", "acked"), board.total("spout", "replayed"), hist


def between(later: LogHistogram, earlier: LogHistogram) -> LogHistogram:
    """The observations ``later`` has that ``earlier`` had not (both cumulative).

    >>> a, b = LogHistogram(), LogHistogram()
    >>> a.record(0.01); b.merge(a); b.record(0.5)
    >>> round(between(b, a).quantile(0.99), 2), between(b, a).count
    (0.5, 1)
    """
    out = LogHistogram()
    for i, c in later.counts.items():
        if c - earlier.counts.get(i, 0) > 0:
            out.counts[i] = c - earlier.counts.get(i, 0)
    out.count = sum(out.counts.values())
    out.total = max(0.0, later.total - earlier.total)
    return out


def new_version(workdir: Path) -> Path:
    """Version 2 of the word count: its split strips each line first (the same words), as a user's fix would."""
    text = EXAMPLE.read_text()
    v2 = text.replace("    return WORD.findall(line.lower())", "    return WORD.findall(line.strip().lower())")
    if v2 == text:
        raise SystemExit(f"bench soak: {EXAMPLE} no longer has the line --update-at edits")
    path = workdir / "v2" / EXAMPLE.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(v2)
    return path


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
            retention = [] if args.retention_minutes is None else ["-c", f"squall.topic.retention.ms={int(args.retention_minutes * 60_000)}"]
            subprocess.run(["squall", "submit", str(EXAMPLE), "--name", NAME, *retention], env=env, check=True, capture_output=True)
            lines = list(read_lines(shakespeare_texts(CACHE)))
            line_bytes = sum(len(line) for line in lines[:2000]) / 2000

            def feed() -> None:
                while not stop.is_set():
                    fed[0] += produce(kafka.bootstrap, f"squall.{NAME}.lines", lines[:2000], wrap=False, rate=args.rate, partitions=2)

            threading.Thread(target=feed, name="soak-feed", daemon=True).start()
            board = StatsBoard(kafka.bootstrap, NAME)
            updater: list[subprocess.Popen[str]] = []
            start = time.monotonic()
            samples: list[dict[str, Any]] = []
            hists: list[LogHistogram] = []
            while (elapsed := time.monotonic() - start) < args.minutes * 60:
                if args.update_at is not None and not updater and elapsed >= args.update_at * 60:
                    update = ["squall", "update", NAME, str(new_version(workdir))]
                    updater.append(subprocess.Popen(update, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
                    update_started = elapsed
                acked, replayed, hist = spout_stats(board)
                hists.append(hist)
                brokers = [n.proc.pid for n in kafka.nodes.values() if n.proc is not None]
                procs = rss_by_process([*family(serve.pid), *brokers])
                samples.append(
                    {
                        "t_s": elapsed,
                        "disk_bytes": float(disk_bytes(workdir / "kafka")),
                        "rss_bytes": float(sum(v for k, v in procs.items() if k != "broker")),
                        "rss_by_process": procs,
                        "acked": acked,
                        "replayed": replayed,
                    }
                )
                disk_mb, rss_mb = samples[-1]["disk_bytes"] / 2**20, samples[-1]["rss_bytes"] / 2**20
                print(f"[soak] {elapsed:6.0f} s: disk {disk_mb:8.1f} MB, squall rss {rss_mb:7.1f} MB, acked {acked:,.0f}, replayed {replayed:,.0f}", flush=True)
                time.sleep(args.every)
            board.close()
            final_topics = topics_mb(workdir / "kafka")
            print("[soak] MB on disk per topic at the end: " + ", ".join(f"{t} {mb:,.1f}" for t, mb in list(final_topics.items())[:8]), flush=True)
            update_out = ""
            if updater:
                update_out = updater[0].communicate(timeout=600)[0]
                print(f"[soak] squall update (from {update_started:.0f} s): {update_out.strip().splitlines()[-1] if update_out.strip() else ''}", flush=True)
        finally:
            stop.set()
            stop_process(serve)
            log.close()
    late = [s for s in samples if s["t_s"] >= args.minutes * 30]
    disk_rate = slope_per_min([(s["t_s"], s["disk_bytes"] / 2**20) for s in late])
    rss_rate = slope_per_min([(s["t_s"], s["rss_bytes"] / 2**20) for s in late])
    input_rate = args.rate * line_bytes * 60 / 2**20
    per_minute = minutes_of(samples, hists)
    names = sorted({k for s in late for k in s["rss_by_process"]})
    process_rates = {k: slope_per_min([(s["t_s"], s["rss_by_process"][k] / 2**20) for s in late if k in s["rss_by_process"]]) for k in names}
    rows = [
        ["broker data dir", f"{samples[0]['disk_bytes'] / 2**20:,.1f}", f"{samples[-1]['disk_bytes'] / 2**20:,.1f}", f"{disk_rate:+,.2f}"],
        ["squall (supervisor + workers) RSS", f"{samples[0]['rss_bytes'] / 2**20:,.1f}", f"{samples[-1]['rss_bytes'] / 2**20:,.1f}", f"{rss_rate:+,.2f}"],
        ["input lines", "-", f"{fed[0]:,} lines", f"{input_rate:+,.2f}"],
    ]
    for k in names:
        rows.append([f"  {k} RSS", f"{_first(samples, k):,.1f}", f"{samples[-1]['rss_by_process'].get(k, 0) / 2**20:,.1f}", f"{process_rates[k]:+,.2f}"])
    print_table(
        f"soak: Apache Kafka, {NAME} fed at {args.rate:,.0f} lines/s for {args.minutes:g} min (growth over the second half)",
        ["what", "first MB", "last MB", "MB/min"],
        rows,
    )
    print_table(
        "per minute" + (f" (squall update at minute {args.update_at:g})" if args.update_at is not None else ""),
        ["minute", "acked lines/s", "replayed", "complete p99 ms"],
        [[f"{m['minute']}", f"{m['acked_per_s']:,.0f}", f"{m['replayed']:,.0f}", f"{m['p99_ms']:,.1f}"] for m in per_minute],
    )
    around = None
    if args.update_at is not None:
        t0, t1 = args.update_at * 60, args.update_at * 60 + 120
        i0 = max((i for i, s in enumerate(samples) if s["t_s"] <= t0), default=0)
        i1 = max((i for i, s in enumerate(samples) if s["t_s"] <= t1), default=len(samples) - 1)
        around = between(hists[i1], hists[i0]).quantile(0.99) * 1000
        span = f"minute {args.update_at:g} to {args.update_at + 2:g}"
        print(f"complete latency p99 over the update ({span}): {around:,.1f} ms; replays in all: {samples[-1]['replayed']:,.0f}")
    result = {
        "rate": args.rate,
        "minutes": args.minutes,
        "update_at": args.update_at,
        "retention_minutes": args.retention_minutes,
        "topics_mb": final_topics,
        "update_output": update_out if args.update_at is not None else None,
        "disk_mb_per_min": disk_rate,
        "rss_mb_per_min": rss_rate,
        "rss_mb_per_min_by_process": process_rates,
        "input_mb_per_min": input_rate,
        "per_minute": per_minute,
        "replayed": samples[-1]["replayed"],
        "complete_p99_ms_over_update": around,
        "samples": samples,
    }
    write_json(args.json, result)
    return result


def topics_mb(kafka_dir: Path) -> dict[str, float]:
    """MB on disk per topic at the end (partitions summed), largest first."""
    sizes: dict[str, float] = {}
    for part in kafka_dir.glob("*/data/*-*"):
        if part.is_dir():
            topic = part.name.rsplit("-", 1)[0]
            sizes[topic] = sizes.get(topic, 0.0) + disk_bytes(part) / 2**20
    return dict(sorted(sizes.items(), key=lambda kv: -kv[1]))


def _first(samples: list[dict[str, Any]], name: str) -> float:
    return next((s["rss_by_process"][name] / 2**20 for s in samples if name in s["rss_by_process"]), 0.0)


def minutes_of(samples: list[dict[str, Any]], hists: list[LogHistogram]) -> list[dict[str, Any]]:
    """Per whole minute: acked trees per second, replays, and the complete latency's p99 (ms) of the trees acked in it."""
    out = []
    minute = 1
    prev = 0
    while True:
        i = max((k for k, s in enumerate(samples) if s["t_s"] <= minute * 60), default=-1)
        if i <= prev or samples[-1]["t_s"] < minute * 60 - 1:
            break
        dt = samples[i]["t_s"] - samples[prev]["t_s"]
        p99 = between(hists[i], hists[prev]).quantile(0.99) * 1000
        out.append(
            {
                "minute": minute,
                "acked_per_s": (samples[i]["acked"] - samples[prev]["acked"]) / dt if dt else 0.0,
                "replayed": samples[i]["replayed"] - samples[prev]["replayed"],
                "p99_ms": p99 if p99 == p99 else 0.0,
            }
        )
        prev = i
        minute += 1
    return out
