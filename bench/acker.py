"""Acker benchmark: ack messages/s of one acker process, complete latency at a fixed
5k trees/s, and memory per pending tree at 1M pending trees.

    python -m bench acker [--trees N] [--json PATH] [--bootstrap HOST:PORT]

Workload: each tree is ``init(root, e1 ^ e2)``, ``ack(root, e1)``, ``ack(root, e2)`` --
three acker messages, batched into records the way collectors flush them.
"""

from __future__ import annotations

import gc
import random
import threading
import time
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from acker import DurableLedger, Ledger, table_put
from bench.common import ROOT, broker, print_table, spawn_worker, wait_until, write_json
from service.brokers import ensure_topology_topics
from service.control import ExecutorAssignment, worker_plan
from streams.config import resolve
from streams.model import load_topology
from streams.monitoring import LogHistogram
from streams.wire import ACKER_COMPONENT, OP_ACK, OP_INIT, ack_result_topic, acker_topic, decode_list, encode_ops

TOPOLOGY = ROOT / "bench" / "topologies" / "acker_only.py"
RUNTIMES = ("native", "faust")


def _setup(bootstrap: str, runtime: str, workdir: Path) -> tuple[str, Any]:
    name = f"ackerbench-{uuid.uuid4().hex[:6]}"
    topology = load_topology(TOPOLOGY, name)
    conf = resolve({"squall.acker.runtime": runtime}, topology.conf)
    ensure_topology_topics(bootstrap, topology, conf)
    plan = worker_plan(TOPOLOGY, topology, conf, bootstrap, workdir / name, service_conf={"squall.acker.runtime": runtime})
    plan = plan.model_copy(update={"workers": ((ExecutorAssignment(ACKER_COMPONENT, (0,)),),)})  # only the acker runs
    proc = spawn_worker(plan, workdir / name)
    log = workdir / name / "worker-0.log"
    ready = ("runs acker tasks [0]", "assigned acker tasks [0]")  # native, faust
    wait_until(lambda: log.exists() and any(r in log.read_text(errors="replace") for r in ready), 60, "acker assignment")
    return name, proc


def _results_consumer(bootstrap: str, name: str) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench.{name}", "fetch.wait.max.ms": 50, "enable.auto.commit": False, "log_level": 0})
    c.assign([TopicPartition(ack_result_topic(name), 0, OFFSET_BEGINNING)])
    return c


def tree_ops(rnd: random.Random) -> tuple[int, list[list[int]], list[list[int]]]:
    root = rnd.getrandbits(64) | 1
    e1, e2 = rnd.getrandbits(64) | 1, rnd.getrandbits(64) | 2
    return root, [[OP_INIT, root, e1 ^ e2, 0]], [[OP_ACK, root, e1], [OP_ACK, root, e2]]


def throughput(bootstrap: str, runtime: str, trees: int, workdir: Path) -> float:
    """Acker messages applied per second by one acker process."""
    name, proc = _setup(bootstrap, runtime, workdir)
    try:
        rnd = random.Random(7)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000, "log_level": 0})
        topic = acker_topic(name)
        results = _results_consumer(bootstrap, name)
        start = time.monotonic()
        batch = 200  # trees per flush of a collector
        for i in range(0, trees, batch):
            inits, acks = [], []
            for _ in range(min(batch, trees - i)):
                _, init, ack = tree_ops(rnd)
                inits += init
                acks += ack
            producer.produce(topic, encode_ops(inits), partition=0)
            producer.produce(topic, encode_ops(acks), partition=0)
            producer.poll(0)
        producer.flush()
        done = 0
        while done < trees:
            for m in results.consume(10000, 0.2):
                if not m.error():
                    done += sum(1 for r in decode_list(m.value(), component="bench", topic="", partition=0, offset=0) if r[0] == 0)
            if time.monotonic() - start > 600:
                raise TimeoutError(f"only {done} of {trees} trees completed")
        elapsed = time.monotonic() - start
        results.close()
        return 3 * trees / elapsed
    finally:
        proc.terminate()
        proc.wait(30)


def latency(bootstrap: str, runtime: str, rate: int, seconds: float, workdir: Path) -> tuple[float, float]:
    """Complete latency (init sent -> ack result received) at ``rate`` trees/s."""
    name, proc = _setup(bootstrap, runtime, workdir)
    sent: dict[int, float] = {}
    hist = LogHistogram()
    stop = threading.Event()
    try:
        results = _results_consumer(bootstrap, name)

        def receive() -> None:
            while not stop.is_set() or len(hist.counts) == 0:
                for m in results.consume(10000, 0.1):
                    if m.error():
                        continue
                    now = time.monotonic()
                    for op, root, _lat in decode_list(m.value(), component="bench", topic="", partition=0, offset=0):
                        t0 = sent.pop(root, None)
                        if t0 is not None and op == 0:
                            hist.record(now - t0)
                if stop.is_set() and not sent:
                    break

        rx = threading.Thread(target=receive, daemon=True)
        rx.start()
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 0})
        topic = acker_topic(name)
        rnd = random.Random(11)
        tick = 0.01  # a collector flush every 10 ms
        per_tick = max(1, int(rate * tick))
        start = time.monotonic()
        n = 0
        while time.monotonic() - start < seconds:
            inits, acks = [], []
            now = time.monotonic()
            for _ in range(per_tick):
                root, init, ack = tree_ops(rnd)
                sent[root] = now
                inits += init
                acks += ack
            producer.produce(topic, encode_ops(inits), partition=0)
            producer.produce(topic, encode_ops(acks), partition=0)
            producer.poll(0)
            n += per_tick
            next_t = start + (n / rate)
            time.sleep(max(0.0, next_t - time.monotonic()))
        producer.flush()
        deadline = time.monotonic() + 30
        while sent and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        rx.join(5)
        results.close()
        return hist.quantile(0.5), hist.quantile(0.99)
    finally:
        proc.terminate()
        proc.wait(30)


class _ChangelogOnlyTable:
    """What :func:`acker.faust_compat.table_put` sees of the faust runtime's Table: its store and its changelog writer.

    The store is a dict, so a ``table_put`` that kept a copy of each record would show in
    the heap; the records themselves are dropped, as the producer sends and forgets them.
    """

    def __init__(self) -> None:
        self.data: dict[bytes, bytes | None] = {}
        self.sent = 0

    def send_changelog(self, partition: int, key: bytes, value: bytes | None) -> None:
        self.sent += 1


def memory_per_pending_tree(trees: int = 1_000_000, faust_table: bool = False) -> tuple[float, float]:
    """(ledger table bytes per tree, all Python heap bytes per tree) with ``trees`` pending.

    Every tree is written to the changelog (``persist_after_s`` 0). With ``faust_table``
    each record also goes through :func:`acker.faust_compat.table_put`, which writes it with
    the faust Table (its store keeps nothing: workaround 5 in acker/faust_compat.py); before that the Table's
    memory store kept every record, 4,243 bytes a tree.
    """
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    dl = DurableLedger(Ledger(30))
    table = _ChangelogOnlyTable()
    rnd = random.Random(3)

    def flush() -> None:
        for root, value in dl.changelog():  # a flush: what a runtime keeps between flushes is bounded
            if faust_table:
                table_put(table, 0, root.to_bytes(8, "big"), value)

    for off in range(trees // 1000):
        dl.apply(off, [[OP_INIT, rnd.getrandbits(64) | 1, 5, 0] for _ in range(1000)])
        if off % 10 == 9:
            flush()
    flush()
    gc.collect()
    heap = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert table.sent == (trees if faust_table else 0), table.sent
    return dl.ledger.nbytes / len(dl), heap / len(dl)


def run(args: Any) -> dict[str, Any]:
    workdir = Path(args.workdir)
    out: dict[str, Any] = {}
    memory = {rt: memory_per_pending_tree(args.pending, faust_table=rt == "faust") for rt in args.runtimes}
    with broker(args.bootstrap, warmup_s=args.broker_warmup) as bootstrap:
        for runtime in args.runtimes:
            row: dict[str, Any] = {"runtime": runtime}
            try:
                row["ack_msgs_per_s"] = throughput(bootstrap, runtime, args.trees, workdir)
                row["complete_latency_p50_s"], row["complete_latency_p99_s"] = latency(bootstrap, runtime, args.rate, args.seconds, workdir)
            except Exception as exc:  # a runtime that cannot run here is reported, not hidden
                row["error"] = f"{type(exc).__name__}: {exc}"
            row["bytes_per_pending_tree"], row["heap_bytes_per_pending_tree"] = memory[runtime]
            out[runtime] = row
    print_table(
        f"acker benchmark ({args.trees:,} trees x 3 msgs; latency at {args.rate:,} trees/s; memory at {args.pending:,} pending)",
        ["runtime", "ack msgs/s", "p50 s", "p99 s", "table B/tree", "heap B/tree", "note"],
        [
            [
                r["runtime"],
                r.get("ack_msgs_per_s"),
                r.get("complete_latency_p50_s"),
                r.get("complete_latency_p99_s"),
                r.get("bytes_per_pending_tree"),
                r.get("heap_bytes_per_pending_tree"),
                r.get("error", ""),
            ]
            for r in out.values()
        ],
    )
    write_json(args.json, out)
    return out
