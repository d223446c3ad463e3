"""Where a squall-acked tree's (or a transactional batch's) time goes, hop by hop, from a job's stats board.

Each row is a latency histogram merged over the executors that record it: a bolt's input transit
and its receipt-to-ack time, the acker's input transit, the ack results' transit to the spout, the
complete latency, and a transactional spout's batch phases. :func:`latency_hists` takes them all
now; :func:`hop_breakdown` gives each row's p50 and p99, counting only what was recorded after an
earlier :func:`latency_hists` if one is given (the steady state after a settling period).
"""

from __future__ import annotations

from typing import Any

from service.run import Job
from streams.monitoring import LogHistogram

COMPLETE_ROW = "complete latency (a tree)"
BATCH_PHASE_ROWS = (
    ("batch_save_latency", "batch: coordinator state write + confirm (x3 a batch)"),
    ("batch_emit_latency", "batch: read its records, emit them and the end markers"),
    ("batch_process_latency", "batch: emit to its tree's ack"),
    ("batch_commit_wait_latency", "batch: acked, waiting for earlier txids to commit"),
    ("batch_commit_latency", "batch: commit tuple to commit acked"),
)


def minus(hist: LogHistogram, base: LogHistogram | None) -> LogHistogram:
    """``hist``'s observations that ``base`` (an earlier snapshot of the same histogram) does not hold."""
    if base is None:
        return hist
    out = LogHistogram()
    for i, c in hist.counts.items():
        if (d := c - base.counts.get(i, 0)) > 0:
            out.counts[i] = d
            out.count += d
    out.total = max(hist.total - base.total, 0.0)
    return out


def latency_hists(job: Job) -> dict[str, LogHistogram]:
    """Each row of :func:`hop_breakdown` as its histogram now, by row name."""
    assert job.board is not None
    b = job.board
    rows: dict[str, LogHistogram] = {}
    spouts = {s.id for s in job.topology.spouts}
    for c in job.topology.components.values():
        if c.id in spouts:
            continue
        rows[f"-> {c.id} (transit)"] = b.hist("bolt", "transit_latency", c.id)
        rows[f"{c.id} (receipt to ack)"] = b.hist("bolt", "process_latency", c.id)
        if job.topology.transactional:
            rows[f"{c.id}: finish_batch + markers, per task"] = b.hist("bolt", "finish_batch_latency", c.id)
    rows["-> acker (transit of acker ops)"] = b.hist("acker", "transit_latency")
    rows["acker -> spout (transit of results)"] = b.hist("spout", "transit_latency")
    rows[COMPLETE_ROW] = b.hist("spout", "complete_latency")
    if job.topology.transactional:  # a batch's phases, in the transactional spout (streams.transactional.spout.BATCH_PHASES)
        for name, label in BATCH_PHASE_ROWS:
            rows[label] = b.hist("spout", name)
    return rows


def hop_breakdown(job: Job, since: dict[str, LogHistogram] | None = None) -> list[dict[str, Any]]:
    """Where a tree's time goes, hop by hop (p50 and p99, seconds): each bolt's input transit
    (producer timestamp to receipt: the sender's flush wait + broker + fetch wait) and its
    process latency (receipt to ack: execute, plus any wait for a tick), the acker's input
    transit, the ack results' transit back to the spout, and the complete latency.

    ``since``: :func:`latency_hists` taken earlier; only what was recorded after it counts."""
    since = since or {}
    return [
        {"hop": name, "p50_s": (d := minus(h, since.get(name))).quantile(0.5), "p99_s": d.quantile(0.99), "count": d.count}
        for name, h in latency_hists(job).items()
    ]
