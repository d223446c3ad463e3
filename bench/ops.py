"""``python -m bench ops [--broker tansu|kafka|both] [--requests N] [--rate R]``: how fast a supervisor answers an operator (issue 48).

One ``squall serve`` (on the embedded broker, or on a fresh one-node Apache Kafka) runs the word
count (examples/wordcount.py) while the Shakespeare lines are fed at ``--rate`` lines/s (a
topology at work, not an idle one). Then:

* every path of the Storm UI's REST API (``/api/v1/...``) and every page of the Squall UI (a 404
  of each included) is requested ``--requests`` times, ``--pause`` seconds apart, after one
  request that warms it;
* the reading verbs (``squall status``, ``list``, ``errors``, ``dlq list``) run ``--verb-runs``
  times each, their wall time from the shell's view (Python's start-up included): answered by
  the local supervisor (``SQUALL_HTTP_PORT`` names it: :mod:`service.cli.fast`), and alone
  (no supervisor where they look: they read the topics).

Reported: p50 and p99 per path and verb (milliseconds), and the first request's time. Targets
(issue 48): every path and page p99 <= 100 ms, every verb <= 0.5 s. Wall times depend on the
machine: compare within one run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import print_table, stop_process, write_json
from bench.compare import CACHE
from bench.feeder import produce
from bench.warmup import warm_broker
from service.brokers import ApacheKafka, free_port
from service.run import read_lines, shakespeare_texts

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "wordcount.py"
NAME = "wc"
PATHS = [
    "/api/v1/cluster/summary",
    "/api/v1/topology/summary",
    f"/api/v1/topology/{NAME}",
    f"/api/v1/topology/{NAME}/component/count",
    f"/api/v1/topology/{NAME}/component/no-such-component",
    f"/api/v1/topology/{NAME}/lag",
]
PAGES = [
    "/",
    f"/topology/{NAME}",
    f"/topology/{NAME}?part=live",
    f"/topology/{NAME}/component/count",
    f"/topology/{NAME}/component/no-such-component",
    f"/topology/{NAME}/trace",
    f"/topology/{NAME}/dlq",
]
VERBS = [["status", NAME], ["list"], ["errors", NAME], ["dlq", NAME, "list"]]
PATH_P99_S = 0.1
VERB_S = 0.5


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank).

    >>> quantile([0.3, 0.1, 0.2, 0.4], 0.5), quantile([0.3, 0.1, 0.2, 0.4], 0.99)
    (0.2, 0.4)
    """
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def _get(url: str) -> float:
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            r.read()
    except urllib.error.HTTPError as e:  # a 404 is an answer too
        e.read()
    return time.perf_counter() - started


def _wait_ready(base: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/readyz", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise TimeoutError(f"the supervisor at {base} was not ready within {timeout_s} s")


def run(args: Any) -> dict[str, Any]:
    """Measure on each broker ``--broker`` names; print a table per broker and return (and write) the JSON."""
    brokers = ["tansu", "kafka"] if args.broker == "both" else [args.broker]
    result: dict[str, Any] = {"rate": args.rate, "requests": args.requests, "verb_runs": args.verb_runs, "brokers": {}}
    for broker in brokers:
        if broker == "kafka":
            with ApacheKafka(nodes=1) as kafka:
                if args.broker_warmup > 0:  # a fresh JVM compiles as it goes: the same warm-up as the throughput benches
                    warm_broker(kafka.bootstrap, args.broker_warmup)
                result["brokers"][broker] = run_one(args, broker, kafka.bootstrap)
        else:
            result["brokers"][broker] = run_one(args, broker, None)
    write_json(args.json, result)
    return result


def run_one(args: Any, broker: str, bootstrap_servers: str | None) -> dict[str, Any]:
    """Serve (on ``bootstrap_servers``, or the embedded broker when None), submit, feed, measure; print the table."""
    broker_port, http_port = free_port(), free_port()
    data = Path(tempfile.mkdtemp(prefix="squall-bench-ops-"))
    env = {**os.environ, "SQUALL_DATA_DIR": str(data), "SQUALL_LOG_LEVEL": "WARNING", "SQUALL_HTTP_PORT": str(http_port)}
    env.pop("SQUALL_CONFIG", None)
    bootstrap = bootstrap_servers or f"127.0.0.1:{broker_port}"
    env["SQUALL_BOOTSTRAP_SERVERS"] = bootstrap
    base = f"http://127.0.0.1:{http_port}"
    log = (data / "serve.log").open("w")
    command = ["squall", "serve", "--http-port", str(http_port)]
    if bootstrap_servers is None:
        command += ["--embedded-broker", "--broker-port", str(broker_port)]
        env.pop("SQUALL_BOOTSTRAP_SERVERS")  # the supervisor starts the embedded broker only without one
    serve = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
    env["SQUALL_BOOTSTRAP_SERVERS"] = bootstrap
    stop = threading.Event()
    try:
        _wait_ready(base, 60)
        subprocess.run(["squall", "submit", str(EXAMPLE), "--name", NAME, "--bootstrap-servers", bootstrap], env=env, check=True, capture_output=True)
        _wait_ready(base, 120)
        lines = list(read_lines(shakespeare_texts(CACHE)))

        def feed() -> None:
            while not stop.is_set():
                produce(bootstrap, f"squall.{NAME}.lines", lines[:2000], wrap=False, rate=args.rate, partitions=2)

        feeder = threading.Thread(target=feed, name="ops-feed", daemon=True)
        feeder.start()
        time.sleep(args.settle)
        rows, out = [], {}
        for path in PATHS + PAGES:
            first = _get(base + path)
            times = []
            for _ in range(args.requests):
                times.append(_get(base + path))
                time.sleep(args.pause)
            p50, p99 = quantile(times, 0.5), quantile(times, 0.99)
            out[path] = {"first_s": first, "p50_s": p50, "p99_s": p99, "requests": len(times), "met": p99 <= PATH_P99_S}
            rows.append([path, f"{first * 1000:.1f}", f"{p50 * 1000:.1f}", f"{p99 * 1000:.1f}", "yes" if p99 <= PATH_P99_S else "no"])
        times = []
        for _ in range(args.verb_runs):  # the interpreter's own start-up at this moment: the floor under every verb
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True)
            times.append(time.perf_counter() - started)
        p50, p99 = quantile(times, 0.5), quantile(times, 0.99)
        out["python -c pass (reference)"] = {"p50_s": p50, "p99_s": p99, "runs": len(times)}
        rows.append(["python -c pass (reference)", "-", f"{p50 * 1000:.1f}", f"{p99 * 1000:.1f}", "-"])
        for how, port in (("answered", str(http_port)), ("alone", "1")):
            for verb in VERBS:
                times = []
                for _ in range(args.verb_runs):
                    started = time.perf_counter()
                    done = subprocess.run(["squall", *verb], env={**env, "SQUALL_HTTP_PORT": port}, capture_output=True)
                    times.append(time.perf_counter() - started)
                    if done.returncode != 0:
                        raise RuntimeError(f"squall {' '.join(verb)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
                label = f"squall {' '.join(verb)} ({how})"
                p50, p99 = quantile(times, 0.5), quantile(times, 0.99)
                out[label] = {"p50_s": p50, "p99_s": p99, "runs": len(times), "met": p99 <= VERB_S}
                rows.append([label, "-", f"{p50 * 1000:.1f}", f"{p99 * 1000:.1f}", "yes" if p99 <= VERB_S else "no"])
        where = "the embedded broker" if broker == "tansu" else "Apache Kafka"
        print_table(
            f"ops: {where}, {NAME} fed at {args.rate:,.0f} lines/s (targets: paths and pages p99 <= {PATH_P99_S * 1000:.0f} ms, verbs <= {VERB_S} s)",
            ["path, page or verb", "first ms", "p50 ms", "p99 ms", "met"],
            rows,
        )
        return {"broker": broker, "bootstrap": bootstrap, "results": out}
    finally:
        stop.set()
        stop_process(serve)
        log.close()
