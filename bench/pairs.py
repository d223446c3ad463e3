"""``python -m bench pairs A B [--workload W] [--runs N] [--broker tansu|kafka] [--target R]``: contender B over contender A, in ABBA pairs.

One pair of runs is not enough to tell two contenders 10-20% apart on this machine: one run's
throughput moves by 5-20% with what the machine did just before (the first run of a session is
the slowest), and the contender that always ran first pays for it. So, as ``python -m bench
trace`` does for tracing's cost:

1. **Alternate the order** (ABBA): pair 0 runs A then B, pair 1 B then A, and so on.
2. **Pair the runs**: each pair's ratio is ``B / A`` of its two runs' throughputs (and CPU per
   record), run back to back; the reported ratio is the median of the pairs' ratios (and,
   beside it, the ratio of the two contenders' median throughputs).
3. **Check every run**: a run whose output is wrong stops the bench.

``--target R`` says whether the median ratio is at least R (issue 26: squall-stateful at least
0.8 x squall-acked on the word count). Prints a table of the runs and the summary; ``--json``
writes them.

Example: ``python -m bench pairs squall-acked squall-stateful --runs 6 --target 0.8``.

``--set-b KEY=VALUE`` (repeatable) runs B with those topology settings, so B may be A itself:
``python -m bench pairs squall-acked squall-acked --set-b squall.transfer.batch.size=500`` is
what that setting changes, measured the same way.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import broker, print_table, write_json
from bench.compare import expected, load_input, normalise, repeated, run_contender
from bench.procs import wait_quiet

Row = dict[str, Any]
Pair = dict[str, Row]


def order(pair: int, a: str, b: str) -> list[str]:
    """Pair ``pair``'s run order (ABBA): ``a`` first in even pairs, ``b`` first in odd ones.

    >>> order(0, "squall-acked", "squall-stateful"), order(1, "squall-acked", "squall-stateful")
    (['squall-acked', 'squall-stateful'], ['squall-stateful', 'squall-acked'])
    """
    return [a, b] if pair % 2 == 0 else [b, a]


def labelled(name: str, settings: dict[str, Any]) -> str:
    """Contender ``name`` as the table shows it when its runs use ``settings`` (``--set-b``): its settings follow it.

    >>> labelled("squall-acked", {}), labelled("squall-acked", {"squall.transfer.batch.size": 500})
    ('squall-acked', 'squall-acked [squall.transfer.batch.size=500]')
    """
    if not settings:
        return name
    return f"{name} [{', '.join(f'{k}={json.dumps(v)}' for k, v in settings.items())}]"


def run_pairs(runs: int, a: str, b: str, run_one: Callable[[int, str], Row]) -> list[Pair]:
    """``runs`` pairs of ``run_one(pair, name)``, in :func:`order`; each row gets ``first`` (whether it ran first in its pair)."""
    pairs: list[Pair] = []
    for i in range(runs):
        pair: Pair = {}
        for name in order(i, a, b):
            print(f"[bench] pair {i}: {name} ...", file=sys.stderr, flush=True)
            row = run_one(i, name)
            row["first"] = name == order(i, a, b)[0]
            pair[name] = row
        pairs.append(pair)
    return pairs


def checked(row: Row, pair: int, name: str, workload: str, records: int) -> Row:
    """A run's row, its output checked and its rates added (``records_per_s``, ``cpu_us_per_record``); the hop breakdown dropped.

    Raises SystemExit if the run's output was wrong.
    """
    row.pop("hops", None)
    if not row["correct"]:
        raise SystemExit(f"[bench] pair {pair}: {name} gave a wrong result on {workload}")
    row["records_per_s"] = records / row["seconds"]
    cpu_s = row.get("cpu_s")  # the limit row measures no process of its own
    row["cpu_us_per_record"] = None if cpu_s is None else cpu_s / records * 1e6
    return row


def summarise(pairs: list[Pair], a: str, b: str, target: float | None = None) -> dict[str, Any]:
    """``b`` over ``a``: each pair's throughput and CPU-per-record ratios, their medians, and the ratio of the median throughputs.

    ``pairs``: per pair, contender -> its row (``records_per_s``, ``cpu_us_per_record``, None
    for a contender whose CPU is not measured: then the CPU ratios are None).
    ``target``: the least median throughput ratio that is good enough (None: no target).

    >>> row = lambda rps, cpu: {"records_per_s": rps, "cpu_us_per_record": cpu}
    >>> s = summarise([{"A": row(100.0, 50.0), "B": row(85.0, 60.0)}, {"A": row(60.0, 80.0), "B": row(54.0, 88.0)}], "A", "B", 0.8)
    >>> [round(r, 3) for r in s["pair_ratios"]], round(s["median_pair_ratio"], 3), s["within_target"]
    ([0.85, 0.9], 0.875, True)
    """
    ratios = [p[b]["records_per_s"] / p[a]["records_per_s"] for p in pairs]
    cpu = [
        None if p[a]["cpu_us_per_record"] is None or p[b]["cpu_us_per_record"] is None else p[b]["cpu_us_per_record"] / p[a]["cpu_us_per_record"] for p in pairs
    ]
    known = [c for c in cpu if c is not None]
    median_a = statistics.median(p[a]["records_per_s"] for p in pairs)
    median_b = statistics.median(p[b]["records_per_s"] for p in pairs)
    median = statistics.median(ratios)
    return {
        "a": a,
        "b": b,
        "pair_ratios": ratios,
        "pair_cpu_ratios": cpu,
        "median_pair_ratio": median,
        "median_pair_cpu_ratio": statistics.median(known) if known else None,
        "median_a_records_per_s": median_a,
        "median_b_records_per_s": median_b,
        "ratio_of_medians": median_b / median_a,
        "target": target,
        "within_target": None if target is None else median >= target,
    }


def run(args: Any) -> dict[str, Any]:
    """``--runs`` ABBA pairs of ``args.a`` and ``args.b`` on ``--workload``, one broker; prints the runs and the summary, writes ``--json``."""
    set_b: dict[str, Any] = getattr(args, "set_b", None) or {}
    a, b = args.a, labelled(args.b, set_b)
    workdir = Path(tempfile.mkdtemp(prefix="squall-bench-"))
    quiet_s, limit_s = (20.0, 300.0) if args.smoke else (60.0, 1800.0)
    lines = repeated(args.workload, load_input(args.workload, args.smoke), getattr(args, "input_copies", 1))
    exp = normalise(args.workload, expected(args.workload, lines))
    records = len(lines) - (0 if args.workload == "wordcount" else 1)  # a header is no record
    kafka = args.broker != "tansu"
    with broker(args.bootstrap, args.broker, args.broker_warmup) as bootstrap:

        def run_one(pair: int, name: str) -> Row:
            if not args.smoke:
                wait_quiet()  # as bench all: each run starts on a quiet machine
            contender, settings = (args.b, set_b) if name == b else (name, None)
            eo = settings if contender == "squall-exactly-once" else None  # --set-b reaches a transactional topology too
            row = run_contender(contender, bootstrap, args.workload, lines, exp, None, quiet_s, limit_s, workdir, settings, on_kafka=kafka, eo_settings=eo)
            if "note" in row:
                raise SystemExit(f"[bench] {name}: {row['note']}")
            return checked(row, pair, name, args.workload, records)

        warm: dict[str, float] = {}
        if getattr(args, "warm_round", False):  # a fresh broker's JIT compiles each contender's paths in its first run (bench/rounds.py::schedule)
            for name in (a, b):
                print(f"[bench] warm-up: {name} (not measured) ...", file=sys.stderr, flush=True)
                warm[name] = run_one(-1, name)["records_per_s"]
        pairs = run_pairs(args.runs, a, b, run_one)
    summary = summarise(pairs, a, b, args.target)
    print_table(
        f"{args.broker}: {args.workload}, {b} over {a}, {records:,} records, ABBA pairs",
        ["pair", "contender", "ran", "records/s", "CPU us/rec", "peak RSS MB", "dups", "pair ratio", "pair CPU ratio"],
        [
            [
                i,
                name,
                "first" if r["first"] else "second",
                r["records_per_s"],
                r["cpu_us_per_record"],
                r["peak_rss_bytes"] / 2**20 if r.get("peak_rss_bytes") else None,
                r["duplicates"],
                summary["pair_ratios"][i] if name == b else None,
                summary["pair_cpu_ratios"][i] if name == b else None,
            ]
            for i, p in enumerate(pairs)
            for name, r in p.items()
        ],
    )
    verdict = "" if args.target is None else f"; target: at least {args.target:g}: {'met' if summary['within_target'] else 'NOT met'}"
    cpu_ratio = summary["median_pair_cpu_ratio"]
    cpu_text = "CPU per record not measured for both" if cpu_ratio is None else f"CPU per record x {cpu_ratio:.3f}"
    print(
        f"{args.broker}: {args.workload}: {b} / {a} = {summary['median_pair_ratio']:.3f} (median of {len(pairs)} pairs; "
        f"{cpu_text}; ratio of the medians {summary['ratio_of_medians']:.3f}){verdict}"
    )
    result = {"broker": args.broker, "workload": args.workload, "records": records, "pairs": pairs, "summary": summary, "smoke": bool(args.smoke)}
    result["set_b"] = set_b
    result["warm_round_records_per_s"] = warm
    write_json(args.json, result)
    return result
