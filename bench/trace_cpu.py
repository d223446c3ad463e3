"""``python -m bench trace-cpu``: the CPU sampled tracing adds per record, on the real executor paths, no broker.

End to end (``python -m bench trace``) one run's throughput moves by 5-20% on this machine,
more than the 3% issue 25 allows tracing, so a difference of 3% cannot be seen there. This
bench measures what tracing adds to the code that runs per tuple, in one process, with
nothing else moving, and compares it with the CPU of the same code without tracing:

1. **Spout**: the real :class:`~streams.runtime.collectors.SpoutOutputCollectorImpl` sends the
   word count's lines as a KafkaSpout does (``emit_tree``, 50 lines a tree, one root each).
2. **split**, then **count**: real :class:`~streams.runtime.bolt.BoltExecutor` s of
   ``examples/wordcount.py`` take each tuple through ``_process`` (decode, the receive
   event, ``execute``, the execute event, emits, acks), as their loop does; ``count`` gets a
   tick every 1,000 tuples per task and at the end of each chunk (it acks and writes on
   ticks). Their outputs go to a list instead of a producer; trace records are encoded
   (orjson) and kept.
3. **Acker**: the real :class:`~acker.durable.DurableLedger` applies their acker ops, and the
   acker executor's trace filter (:meth:`acker.runtime_native.AckerExecutor._trace`) reads them.

The two variants, untraced and traced (``topology.debug``, ``squall.trace.sample.rate``
0.01), each keep their executors and take the lines in chunks of ``--chunk``, alternating
chunk by chunk (ABBA), so that the machine's slow and fast moments fall on both. Cost = the
traced variant's CPU (``time.thread_time``, summed over the chunks) / the untraced one's - 1.
This overstates the cost on a running topology: the denominator leaves out Kafka (producing,
fetching, the broker), which tracing does not touch. Every chunk's trees must all complete,
and the traced variant's sample is read back from its trace records (about 1% of the trees).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from acker import AckerExecutor, DurableLedger, Ledger, Outcome
from bench.common import ROOT, print_table, write_json
from bench.compare import CACHE, TRACED
from service.run import read_lines, shakespeare_texts
from streams import DEFAULT_STREAM, Spout, Topology
from streams.config import resolve
from streams.model import load_topology, tick_tuple
from streams.monitoring import Tracer, decode_batch
from streams.runtime import BoltExecutor, Executor, ExecutorEnv, Router, SpoutOutputCollectorImpl
from streams.testing import Record

TREE = resolve().tree_records
"""Lines per tree, as a KafkaSpout sends them (``squall.spout.tree.records``' default)."""
TICK_EVERY = 1000
"""Tuples per count task between ticks."""


Sent = list[tuple[str, bytes, int]]


def capture(into: Sent) -> Callable[..., None]:
    """A stand-in for an executor's ``produce(topic, value, key=None, partition=...)``: keeps ``(topic, value, partition)``."""

    def produce(topic: str, value: bytes, key: bytes | None = None, partition: int = -1, **_: Any) -> None:
        into.append((topic, value, partition))

    return produce


def env(topology: Topology, component: str, traced: bool) -> ExecutorEnv:
    conf = resolve(topology.conf, TRACED if traced else {}, where=component)
    """``component``'s executor environment; its producer points at a closed port (nothing is produced through it)."""
    return ExecutorEnv(topology=topology, component=component, conf=conf, bootstrap="127.0.0.1:1")


def bolt(topology: Topology, component: str, traced: bool, sent: Sent) -> BoltExecutor:
    """A bolt executor of ``component`` with every task open, producing into ``sent``."""
    ex = BoltExecutor(env(topology, component, traced))
    ex.produce = ex.transfer.send = capture(sent)  # its tuples leave in packs, as in a run
    for p in ex.tasks:
        ex.by_partition[p] = ex._new_task(p)
    return ex


class Pipeline:
    """The word count's executors of one variant (untraced or traced), fed chunk by chunk.

    Args:
      topology: ``examples/wordcount.py``'s.
      traced: ``topology.debug`` with ``squall.trace.sample.rate`` 0.01.
    """

    def __init__(self, topology: Topology, traced: bool) -> None:
        self.spout_sent: Sent = []
        self.lines_ex = Executor(env(topology, "lines", traced))
        task_id, ctx, _ = self.lines_ex._task_copy(0, Spout)
        router = Router(topology, "lines", ctx)
        self.spout = SpoutOutputCollectorImpl(router, task_id, capture(self.spout_sent), self.lines_ex.acks, lambda *a: None, lambda *a: None)
        self.spout.tracer = self.lines_ex.tracer
        self.split_sent: Sent = []
        self.split = bolt(topology, "split", traced, self.split_sent)
        self.count = bolt(topology, "count", traced, [])
        self.acker = AckerExecutor.__new__(AckerExecutor)  # only its trace filter runs here
        self.acker.tracer = Tracer("__acker", "bench", TRACED["squall.trace.sample.rate"], lambda k, v: None) if traced else None
        self.tracers = [t for t in (self.lines_ex.tracer, self.split.tracer, self.count.tracer, self.acker.tracer) if t is not None]
        self.published: list[bytes] = []
        for t in self.tracers:  # trace records are encoded as in a run, and kept here instead of produced
            t.publish = lambda key, value: self.published.append(value)
        self.ledger = DurableLedger(Ledger(300.0, clock=time.monotonic))
        self.applied = 0
        self.completed = 0
        self.trees = 0
        self.offsets: dict[tuple[str, int], int] = {}
        self.cpu_s = 0.0

    def feed(self, lines: list[str]) -> float:
        """``lines`` through spout, split, count (a tick to every task at the end) and acker; the CPU seconds it took this thread.

        Raises AssertionError if a tree of the chunk did not complete.
        """
        self.spout_sent.clear()
        self.split_sent.clear()
        start = time.thread_time()
        for i in range(0, len(lines), TREE):
            self.spout.emit_tree([(DEFAULT_STREAM, [line]) for line in lines[i : i + TREE]], msg_id=i)
        self._deliver(self.split, self.spout_sent)
        self._settle(self.lines_ex)
        self._settle(self.split)
        self._deliver(self.count, self.split_sent)
        for task in self.count.by_partition.values():
            self.count._execute(task, tick_tuple())
        self._settle(self.count)
        for t in self.tracers:
            t.maybe_flush(time.monotonic())
        spent = time.thread_time() - start
        self.trees += (len(lines) + TREE - 1) // TREE
        assert self.completed == self.trees, f"{self.completed} of {self.trees} trees completed"
        self.cpu_s += spent
        return spent

    def _deliver(self, ex: BoltExecutor, sent: Sent) -> None:
        """``sent`` read by ``ex`` as its loop reads records (``_process``), with a tick every :data:`TICK_EVERY` per task."""
        offsets = self.offsets
        component, topic = ex.component, ex.topic
        now_ms = int(time.time() * 1000)
        for _topic, value, p in sent:
            off = offsets.get((component, p), 0)
            offsets[(component, p)] = off + 1
            ex._process(Record(topic, p, off, value, timestamp_ms=now_ms))
            if component == "count" and off % TICK_EVERY == TICK_EVERY - 1:
                ex._execute(ex.by_partition[p], tick_tuple())
        ex.transfer.flush()  # the end of the executor's round

    def _settle(self, buffer: Executor) -> None:
        """The acker's part: ``buffer``'s ops applied (one acker record per partition), then its trace filter."""
        assert buffer.acks is not None
        acker = self.acker
        for p, ops in buffer.acks.drain().items():
            outs: list[Outcome] = self.ledger.apply(self.applied, ops)
            self.applied += 1
            if acker.tracer is not None:
                acker._trace(p, ops, outs)
            self.completed += sum(1 for o in outs if o.reason.value == "complete")

    def sampled(self) -> dict[str, int]:
        """The trees the traced variant sampled, and their events (all flushed first)."""
        for t in self.tracers:
            t.flush()
        events = [e for raw in self.published for e in decode_batch(raw, topic="bench", partition=0, offset=0)]
        return {"sampled_trees": len({e.root for e in events}), "events": len(events)}


def run(args: Any) -> dict[str, Any]:
    """Both variants over ``--lines`` lines in chunks of ``--chunk``, alternating (ABBA); prints the table and the cost, writes ``--json``."""
    topology = load_topology(ROOT / "examples" / "wordcount.py", "trace-cpu")
    lines = [line.decode() for line in read_lines(shakespeare_texts(CACHE))][: args.lines]
    base, traced = Pipeline(topology, False), Pipeline(topology, True)
    ratios: list[float] = []
    for r in range(args.repeats):
        for n, i in enumerate(range(0, len(lines), args.chunk)):
            chunk = lines[i : i + args.chunk]
            gc.collect()
            if (n + r) % 2 == 0:
                b, t = base.feed(chunk), traced.feed(chunk)
            else:
                t, b = traced.feed(chunk), base.feed(chunk)
            ratios.append(t / b - 1)
    done = base.trees
    cost = traced.cpu_s / base.cpu_s - 1
    sample = traced.sampled()
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    result = {
        "lines": len(lines) * args.repeats,
        "chunk": args.chunk,
        "trees": done,
        "untraced_cpu_s": base.cpu_s,
        "traced_cpu_s": traced.cpu_s,
        "cpu_cost": cost,
        "chunk_cost_quartiles": quartiles,
        **sample,
        "sample_share": sample["sampled_trees"] / done,
    }
    lines_run = result["lines"]
    print_table(
        f"tracing 1% of trees: word count, {lines_run:,} lines in chunks of {args.chunk:,}, both variants alternating; CPU of the executor paths",
        ["variant", "CPU s", "us/line", "trees", "sampled trees", "events"],
        [
            ["untraced", base.cpu_s, base.cpu_s / lines_run * 1e6, done, 0, 0],
            ["traced", traced.cpu_s, traced.cpu_s / lines_run * 1e6, done, sample["sampled_trees"], sample["events"]],
        ],
    )
    print(
        f"tracing 1% of trees (sampled {result['sample_share']:.2%}) adds {(traced.cpu_s - base.cpu_s) / lines_run * 1e6:.2f} us of CPU per line: "
        f"{cost:+.1%} of the executor paths' CPU (per chunk pair: quartiles {quartiles[0]:+.1%} / {quartiles[1]:+.1%} / {quartiles[2]:+.1%}); "
        "target: at most 3%"
    )
    write_json(args.json, result)
    return result
