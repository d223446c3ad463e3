"""``python -m tests``: the whole suite in four lanes, stopping at the first that fails (what ``.ci/run`` calls).

1. **static**: ruff (lint and format), mypy --strict and the layer contract
   (``tests/unit/test_lint.py``, ``tests/unit/test_layers.py``): a typo fails in about a
   minute, not after the half hour the brokers take.
2. **unit**: the broker-free tests (hypothesis properties, the test kit), on two pytest-xdist
   workers (they are CPU-bound: one per core), about 2 minutes.
3. **integration**: real brokers (Apache Kafka, tansu), PostgreSQL, Prometheus; two
   pytest-xdist workers (``SQUALL_TEST_WORKERS``), each with its own brokers, a module's tests
   on one worker (tests/integration/conftest.py, ``xdist_group``): most of these tests wait (on
   timeouts, kills, restarts), so two side by side take about two thirds of the wall time.
4. **hosts**: several hosts in network namespaces (:data:`HOSTS`), alone.

``python -m tests --lane unit`` runs one lane; arguments after ``--`` go to every pytest run
(``python -m tests -- -k acker``). A lane whose pytest collects nothing fails (pytest's exit 5).
The last line sums the lanes that ran: ``total: N passed, N failed``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

STATIC = ["tests/unit/test_lint.py", "tests/unit/test_layers.py"]
HOSTS = ["tests/integration/test_multihost.py", "tests/integration/test_multihost_kafka.py"]
"""Several hosts on one machine (network namespaces, cuts of 22-40 s): they run alone, because a
busy neighbour starves their workers of CPU, and a lease that lapses for that (not for the cut)
fails what they assert (measured: a worker paused 0.3 s without a lease beside a Spark test)."""

LANES: dict[str, list[str]] = {
    "static": STATIC,
    "unit": ["tests/unit", *(f"--ignore={p}" for p in STATIC), "-n", os.environ.get("SQUALL_TEST_WORKERS", "2")],
    "integration": ["tests/integration", *(f"--ignore={p}" for p in HOSTS), "-n", os.environ.get("SQUALL_TEST_WORKERS", "2"), "--dist", "loadgroup"],
    "hosts": HOSTS,
}
"""Lane -> pytest arguments, in the order they run."""

COUNT = re.compile(r"(\d+) (passed|failed|error|errors)\b")
CLOSING = re.compile(r"^=*\s*\d+ (passed|failed|skipped|deselected|errors?|xfailed|xpassed|warnings?)\b.* in [\d.]+s\b")
"""pytest's closing line (``3 failed, 125 passed, 3 deselected in 2933.41s``), not a client's log line that says ``failed``."""


def counts(output: str) -> dict[str, int]:
    """``passed`` and ``failed`` (errors counted as failed) from pytest's closing line.

    >>> counts("3 failed, 690 passed, 2 errors in 1990.1s (0:33:10)")
    {'passed': 690, 'failed': 5}
    >>> closing = "=== 125 passed in 2933.41s ==="
    >>> rdkafka = "%3|FAIL| 127.0.0.1:28270 failed: Connection refused (after 0ms in state CONNECT)"
    >>> counts(closing + chr(10) + rdkafka)
    {'passed': 125, 'failed': 0}
    """
    lines = [line for line in output.splitlines() if CLOSING.match(line.strip())]
    out = {"passed": 0, "failed": 0}
    for n, what in COUNT.findall(lines[-1] if lines else ""):
        out["passed" if what == "passed" else "failed"] += int(n)
    return out


def run_lane(name: str, extra: list[str]) -> tuple[int, dict[str, int]]:
    """Run one lane's pytest, streaming its output; return its exit code and counts."""
    cmd = [sys.executable, "-m", "pytest", "-q", *LANES[name], *extra]
    print(f"== lane {name}: {' '.join(cmd[1:])}", flush=True)
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    seen: list[str] = []
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        seen.append(line)
    code = proc.wait()
    print(f"== lane {name}: exit {code} in {time.monotonic() - started:.0f} s", flush=True)
    return code, counts("".join(seen[-50:]))


def main(argv: list[str] | None = None) -> int:
    """Run the lanes; return the first failing lane's exit code (0 when all pass)."""
    args = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in args:
        at = args.index("--")
        args, extra = args[:at], args[at + 1 :]
    parser = argparse.ArgumentParser(prog="python -m tests", description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--lane", choices=list(LANES), action="append", help="run only this lane (repeatable)")
    opts = parser.parse_args(args)
    total = {"passed": 0, "failed": 0}
    code = 0
    for name in opts.lane or list(LANES):
        code, got = run_lane(name, extra)
        total = {k: total[k] + got[k] for k in total}
        if code != 0:
            print(f"lane {name} failed (exit {code}): the lanes after it did not run", flush=True)
            break
    print(f"total: {total['passed']} passed, {total['failed']} failed", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
