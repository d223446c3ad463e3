"""The acker's CPU per tree without a broker: the real ledger, changelog discipline and
outcome recording in a plain loop, so a change to them is measured without Kafka's noise.

    python -m bench acker-cpu [--trees N] [--repeats R] [--json PATH]

Workload (what an acker task sees from a spout and two bolt hops): per tree one
``init(root, e1)``, then ``ack(root, e1 ^ e2)`` about ``lag`` ops later and ``ack(root, e2)``
``2 * lag`` ops later, in input records of 1,000 ops; a flush (changelog pass, commit offset,
gc) every three records, 25 ms apart on the ledger's clock, so trees live across two flushes
and stay younger than ``squall.acker.persist.after.secs`` (2 s): the common, healthy case.
Reported: CPU microseconds per tree (``time.process_time``), best of ``repeats``.
"""

from __future__ import annotations

import random
import time
from typing import Any

from acker import DurableLedger, Ledger, record_outcomes
from bench.common import print_table, write_json
from streams.monitoring import ExecutorStats
from streams.wire import OP_ACK, OP_INIT

OPS_PER_RECORD = 1000
RECORDS_PER_FLUSH = 3


def workload(trees: int, lag: int, seed: int = 1) -> list[list[list[int]]]:
    """The input records: ``init`` / ``ack`` / ``ack`` per tree, as described above."""
    rnd = random.Random(seed)
    roots = [rnd.getrandbits(64) | 1 for _ in range(trees)]
    e1 = [rnd.getrandbits(64) | 1 for _ in range(trees)]
    e2 = [rnd.getrandbits(64) | 1 for _ in range(trees)]
    ops: list[list[int]] = []
    for i in range(trees + 2 * lag):
        if i < trees:
            ops.append([OP_INIT, roots[i], e1[i], 0])
        if 0 <= i - lag < trees:
            j = i - lag
            ops.append([OP_ACK, roots[j], e1[j] ^ e2[j]])
        if 0 <= i - 2 * lag < trees:
            j = i - 2 * lag
            ops.append([OP_ACK, roots[j], e2[j]])
    return [ops[i : i + OPS_PER_RECORD] for i in range(0, len(ops), OPS_PER_RECORD)]


def one_run(records: list[list[list[int]]], trees: int, persist_after_s: float) -> float:
    """CPU seconds for the whole workload; raises AssertionError if a tree did not complete."""
    now = [1000.0]
    dl = DurableLedger(Ledger(30.0, clock=lambda: now[0]), persist_after_s=persist_after_s)
    stats = ExecutorStats("__acker", "__acker", "acker", "bench")
    results: dict[int, list[list[Any]]] = {}
    copies = [[list(op) for op in rec] for rec in records]  # decoded records are fresh lists
    start = time.process_time()
    for offset, ops in enumerate(copies):
        record_outcomes(dl.apply(offset, ops), stats, results)
        if offset % RECORDS_PER_FLUSH == RECORDS_PER_FLUSH - 1:
            now[0] += 0.025
            dl.changelog()
            dl.gc(dl.commit_offset(offset + 1))
            results = {}
    spent = time.process_time() - start
    assert stats.counters.get("complete") == trees and len(dl) == 0, stats.counters
    return spent


def run(args: Any) -> dict[str, Any]:
    records = workload(args.trees, lag=3000)
    rows = []
    result: dict[str, Any] = {"trees": args.trees, "repeats": args.repeats, "cases": {}}
    for label, persist_after_s in (("young trees kept out of the changelog (default)", 2.0), ("every changed tree written (persist after 0 s)", 0.0)):
        best = min(one_run(records, args.trees, persist_after_s) for _ in range(args.repeats))
        us = best / args.trees * 1e6
        result["cases"][label] = {"persist_after_s": persist_after_s, "cpu_us_per_tree": us, "trees_per_cpu_s": args.trees / best}
        rows.append([label, us, args.trees / best])
    print_table(f"acker CPU per tree, no broker ({args.trees:,} trees, best of {args.repeats})", ["case", "CPU us/tree", "trees per CPU s"], rows)
    write_json(args.json, result)
    return result
