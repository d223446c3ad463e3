"""``python -m bench idle [--seconds S] [--examples ...]``: the CPU a running topology uses with no input (issue 28).

A service runs around the clock, and most of the time its input is a trickle or nothing. An idle
topology must use almost no CPU: each executor's loop blocks on its input when a round did
nothing (Storm's spout wait strategy), it does not spin. A held-out run found the transactional
spout's worker at ~95% of a core with no input: its loop polled the ack results without a wait
whenever no batch was in flight.

For each example (default: the acked, the stateful and the exactly-once word count, and the
exactly-once flights), on one broker:

1. start the topology and wait until it is ready;
2. feed its spout :data:`WARM` records (every component has then run, and every batch and
   checkpoint they cause has ended after :data:`SETTLE_S` seconds);
3. measure the user + system CPU of every worker process (and its children) over
   ``--seconds``, as a fraction of one core.

Prints one row per worker (its components) and each topology's total; ``--json`` writes them.
Target (issue 28): at most :data:`TARGET` of a core per worker.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, broker, print_table, write_json
from bench.procs import tree_cpu_seconds
from service.config import ServiceSettings
from service.run import Job

EXAMPLES = ["wordcount.py", "wordcount_stateful.py", "wordcount_exactly_once.py", "flights_exactly_once.py"]
WARM = 20
"""Records fed before the measurement (one line of the example's input shape each)."""
SETTLE_S = 15.0
"""Seconds between the warm records and the measurement: their batches, checkpoints and commits end."""
TARGET = 0.05
"""Issue 28: an idle topology uses almost no CPU; here, at most 5% of a core per worker."""
SAMPLE = {
    "lines": b"to be or not to be that is the question",
    "rows": b"2013,1,1,517,515,2,830,819,11,UA,1545,N14228,EWR,IAH,227,1400,5,15,2013-01-01T10:00:00Z",
}
"""A record per spout name of the examples (word count lines, flights rows)."""


def idle_cpu(bootstrap: str, example: str, seconds: float, workdir: Path) -> list[dict[str, Any]]:
    """One row per worker of ``example`` idle: ``worker``, ``components``, ``cpu_share`` (of one core) over ``seconds``."""
    settings = ServiceSettings(bootstrap_servers=bootstrap, data_dir=workdir, log_level="WARNING")
    job = Job(ROOT / "examples" / example, Path("/dev/null"), None, settings)
    try:
        job.start(produce_input=False)
        job.wait_ready()
        for spout in job.topology.spouts:
            job.produce(spout.id, [SAMPLE.get(spout.id, b"idle")] * WARM)
        time.sleep(SETTLE_S)
        assert job.cluster is not None
        procs = job.cluster.procs
        before = {i: tree_cpu_seconds(p.pid) for i, p in procs.items()}
        start = time.monotonic()
        time.sleep(seconds)
        after = {i: tree_cpu_seconds(p.pid) for i, p in procs.items()}
        spent = time.monotonic() - start
        return [{"worker": i, "components": job.cluster.components(i), "cpu_share": (after[i] - before[i]) / spent} for i in sorted(procs)]
    finally:
        job.close()


def run(args: Any) -> dict[str, Any]:
    """Every ``--examples`` topology idle for ``--seconds`` on one broker; prints the table, writes ``--json``."""
    workdir = Path(tempfile.mkdtemp(prefix="squall-bench-"))
    result: dict[str, Any] = {"broker": args.broker, "seconds": args.seconds, "target": TARGET, "topologies": {}}
    with broker(args.bootstrap, args.broker, args.broker_warmup) as bootstrap:
        for example in args.examples:
            print(f"[bench] idle: {example} ...", file=sys.stderr, flush=True)
            result["topologies"][example] = idle_cpu(bootstrap, example, args.seconds, workdir)
    rows = result["topologies"]
    print_table(
        f"{args.broker}: CPU of idle topologies ({args.seconds:g} s, after {WARM} records and {SETTLE_S:g} s)",
        ["topology", "worker", "components", "% of a core"],
        [[ex, r["worker"], " ".join(r["components"]), r["cpu_share"] * 100] for ex, workers in rows.items() for r in workers],
    )
    for ex, workers in rows.items():
        worst = max(r["cpu_share"] for r in workers)
        total = sum(r["cpu_share"] for r in workers)
        verdict = "met" if worst <= TARGET else "NOT met"
        print(f"{args.broker}: {ex} idle: {total:.1%} of a core in all, busiest worker {worst:.1%} (target: at most {TARGET:.0%} per worker: {verdict})")
    write_json(args.json, result)
    return result
