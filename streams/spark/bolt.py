"""SparkBolt: a bolt whose tuples are processed by a Spark Structured Streaming query.

The query reads the bolt's input topic ``squall.T.<bolt>`` with the ``squall-kafka``
source (its partitions are the bolt's tasks) and runs :class:`BoltProcessor` over each
partition of a micro-batch with ``mapInArrow``. The processor keeps Storm's envelope
algebra by running the ordinary :class:`~streams.runtime.collectors.OutputCollector`: every
output is anchored to its input with fresh 64-bit edge ids, routed by the subscribers'
groupings and produced to Kafka from the task itself, in packs as a Python bolt's are;
every input is acked (``edge ^ ack_val``) or, if the user function raised on it, failed.
The task flushes its outputs, then returns its acks, coalesced per root, as rows; the
driver (:mod:`streams.spark.bolt_commit`, Spark's ``foreachBatch``) sends one op per root
per micro-batch, so a tree is acked only after the batch's outputs are durable.

User functions (``batch=``):

* ``"rows"`` (default): ``fn(tuple) -> iterable``. Each item is a values list for the
  default stream, or an :class:`Emit` for another stream, a direct task or an
  unanchored emit. An exception fails that tuple only.
* ``"pandas"`` / ``"arrow"``: ``fn(frame) -> frame``. The input holds one column per
  input field plus ``_row`` (int, the row's position). The output holds the output
  fields plus ``_row`` (the input row each output row is anchored to; -1 or null for
  unanchored) and optionally ``_stream``. If ``fn`` raises on a batch, it is called
  again row by row so that only the rows that raise are failed (so in these modes a
  row may be passed to ``fn`` twice; side effects belong in a committer).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from typing_extensions import override

from streams.config import resolve
from streams.exceptions import DecodeError, FailedException, FatalError
from streams.model.bolt import Bolt
from streams.model.component import OutputFieldsDeclarer
from streams.model.context import TopologyContext
from streams.model.loader import load_topology
from streams.model.tuple import DEFAULT_STREAM, Tuple
from streams.monitoring.stats import LogHistogram
from streams.runtime.acks import AckBuffer
from streams.runtime.collectors import BoltOutputCollectorImpl
from streams.runtime.routing import Router
from streams.runtime.transfer import TupleTransfer
from streams.spark.exceptions import SparkBoltError
from streams.wire.acker import why_text
from streams.wire.codec import decode_tuples
from streams.wire.dead_letter import dead_letter_headers
from streams.wire.naming import acker_topic, component_topic, dead_letter_topic

log = logging.getLogger("squall.spark.bolt")

BATCH_MODES = ("rows", "pandas", "arrow")

# Tail rows of one task run (``OUT_SCHEMA``), folded by the driver (streams.spark.bolt_commit).
# The task's outputs never become rows: the task produces them to Kafka itself.
KIND_ACK = 1  # XOR val into root's ack
KIND_FAIL = 2  # fail root; value: why (UTF-8), or null
KIND_STATS = 3  # value = JSON counters of one task run
KIND_STATE = 4  # committer: key = JSON key, value = JSON delta

WARMUP_STREAM = "__warmup"  # untracked records the driver writes at start; never reach user code

OUT_SCHEMA_DDL = "kind tinyint, key binary, value binary, root long, val long"


@functools.cache
def out_arrow_schema() -> Any:
    """The Arrow form of :data:`OUT_SCHEMA_DDL` (pyarrow is imported only where Spark runs, so topologies load without the spark extra)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("kind", pa.int8()),
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("root", pa.int64()),
            ("val", pa.int64()),
        ]
    )


_U64 = 1 << 64
_I64 = 1 << 63


def to_signed(v: int) -> int:
    """Unsigned 64-bit id -> Spark's signed long (two's complement)."""
    return v - _U64 if v >= _I64 else v


def to_unsigned(v: int) -> int:
    """A 64-bit id from Spark's signed long back to Squall's unsigned form."""
    return v + _U64 if v < 0 else v


@dataclass
class Emit:
    """One output of a rows-mode function: ``values`` on ``stream``; ``task`` for a direct stream; ``anchored=False`` for an unanchored (untracked) emit."""

    values: list[Any]
    stream: str = DEFAULT_STREAM
    task: int | None = None
    anchored: bool = True


class SparkBolt(Bolt):
    """A bolt run by Spark (see the module doc).

    ``fn``: the user function. ``output_fields``: fields of the default stream;
    ``streams``: more streams ``{name: fields}``. ``batch``: ``rows`` | ``pandas`` |
    ``arrow``. ``committer``: a :class:`streams.spark.committer.SparkCommitter` makes this a
    committer bolt whose state is written once per micro-batch id (the txid).

    Raises :class:`SparkBoltError` from :meth:`validate` (called by ``set_bolt``, so the
    message names the component) on a bad ``batch`` or a ``fn`` that is not callable.
    """

    needs_real_kafka = "a SparkBolt's Spark Structured Streaming query reads and writes Kafka topics itself"

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        output_fields: list[str] | tuple[str, ...] | None = None,
        streams: dict[str, list[str] | tuple[str, ...]] | None = None,
        batch: str = "rows",
        committer: Any = None,
    ) -> None:
        self.fn = fn
        self.output_fields = tuple(output_fields) if output_fields is not None else None
        self.extra_streams = {k: tuple(v) for k, v in (streams or {}).items()}
        self.batch = batch
        self.committer = committer

    @override
    def validate(self, component_id: str) -> None:
        if not callable(self.fn):
            raise SparkBoltError(f"[{component_id}] SparkBolt needs a callable, got {type(self.fn).__name__}")
        if self.batch not in BATCH_MODES:
            raise SparkBoltError(f"[{component_id}] SparkBolt batch must be one of {BATCH_MODES}, not {self.batch!r}")

    @override
    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        if self.output_fields is not None:
            declarer.declare(list(self.output_fields))
        for name, fields in self.extra_streams.items():
            declarer.declare(list(fields), stream=name)

    @override
    def execute(self, tuple: Tuple) -> None:
        raise FatalError("a SparkBolt runs in a Spark query (streams.spark.runtime), not in a Python bolt executor")


# -- the processor (runs in Spark's Python workers) ---------------------------------------
@dataclass
class _RunStats:
    executed: int = 0
    failed: int = 0
    errors: int = 0
    poison: int = 0
    emitted: int = 0
    records: int = 0  # Kafka records produced: packs of tuples, set_output records, dead letters
    lost: int = 0  # of those, records the broker did not take
    hist: LogHistogram = field(default_factory=LogHistogram)
    next_offsets: dict[int, int] = field(default_factory=dict)  # input partition -> last offset + 1

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "executed": self.executed,
                "failed": self.failed,
                "errors": self.errors,
                "poison": self.poison,
                "emitted": self.emitted,
                "records": self.records,
                "lost": self.lost,
                "execute_latency": self.hist.to_json(),
                "next_offsets": {str(p): o for p, o in self.next_offsets.items()},
            }
        ).encode()


class _Tail:
    """A task run's tail rows being built (``OUT_SCHEMA``): acks, fails, counters, committer deltas."""

    def __init__(self) -> None:
        self.kind: list[int] = []
        self.key: list[bytes | None] = []
        self.value: list[bytes | None] = []
        self.root: list[int | None] = []
        self.val: list[int | None] = []

    def add(self, kind: int, key: bytes | None = None, value: bytes | None = None, root: int | None = None, val: int | None = None) -> None:
        self.kind.append(kind)
        self.key.append(key)
        self.value.append(value)
        self.root.append(root)
        self.val.append(val)

    def batch(self) -> Any:
        import pyarrow as pa

        schema = out_arrow_schema()
        cols = [self.kind, self.key, self.value, self.root, self.val]
        return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=True)], schema=schema)


class Outlet(Protocol):
    """Where a task run's records go: :class:`streams.spark.sink.Delivery` in Spark, a list in tests."""

    def produce(self, topic: str, value: bytes | None, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
        """Queue one record (``headers``: ``(name, bytes)`` pairs)."""

    def finish(self) -> bool:
        """Wait for every delivery; True if the broker took them all. Raises SparkSinkError if the wait timed out."""

    def lost(self) -> int:
        """Records the broker did not take, since this outlet was made."""


class BoltProcessor:
    """``mapInArrow`` function of a SparkBolt: input records -> Kafka records, and tail rows for the driver.

    Picklable: it holds the topology file, name and overrides, and the producer's settings
    (``producer_conf``, librdkafka keys with ``bootstrap.servers``; ``flush_timeout_s``:
    how long a task waits for its deliveries, seconds). The topology is loaded once per
    Python worker process (as every Squall worker loads it) and cached, and so is the
    producer (:mod:`streams.spark.clients`).
    """

    def __init__(
        self,
        topology_file: str,
        name: str,
        overrides: dict[str, Any],
        service_conf: dict[str, Any],
        component: str,
        producer_conf: dict[str, Any] | None = None,
        flush_timeout_s: float = 60.0,
    ) -> None:
        self.topology_file = topology_file
        self.name = name
        self.overrides = overrides
        self.service_conf = service_conf
        self.component = component
        self.producer_conf = producer_conf or {}
        self.flush_timeout_s = flush_timeout_s
        self._state: _ProcessorState | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_state": None}

    def state(self) -> _ProcessorState:
        """The topology, bolt and collectors of this Python worker, loaded on first use."""
        if self._state is None:
            self._state = _ProcessorState.load(self.topology_file, self.name, self.overrides, self.service_conf, self.component)
        return self._state

    def outlet(self) -> Outlet:
        """This task run's producer session (the process's cached producer)."""
        from streams.spark.sink import Delivery

        if not self.producer_conf.get("bootstrap.servers"):
            raise SparkBoltError(f"[{self.component}] the processor has no producer settings (the SparkBolt's driver sets them)")
        return Delivery(self.producer_conf, self.component, self.flush_timeout_s)

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        """Run the bolt over one task's Arrow batches (Spark's ``mapInArrow``); yields its tail rows."""
        return self.state().run(batches, self.outlet())


class _ProcessorState:
    """What a Python worker keeps between micro-batches: topology, bolt, per-task collectors."""

    _cache: dict[tuple[str, str, str, str], _ProcessorState] = {}

    def __init__(self, topology: Any, component: str, conf: Any) -> None:
        self.topology = topology
        self.component = component
        self.conf = conf
        self.cdef = topology.components[component]
        self.bolt: SparkBolt = self.cdef.obj
        self.topic = component_topic(topology.name, component)
        self.acker_topic = acker_topic(topology.name)
        self.collectors: dict[int, Any] = {}
        self.input_fields = self._input_fields()
        self.committer = self.bolt.committer
        self.updates: list[tuple[Any, Any]] = []

    @classmethod
    def load(cls, topology_file: str, name: str, overrides: dict[str, Any], service_conf: dict[str, Any], component: str) -> _ProcessorState:
        key = (topology_file, name, json.dumps(overrides, sort_keys=True), component)
        got = cls._cache.get(key)
        if got is None:
            topology = load_topology(topology_file, name)
            topology.conf.update(overrides)
            cdef = topology.components[component]
            if not isinstance(cdef.obj, SparkBolt):
                raise SparkBoltError(f"[{component}] is not a SparkBolt")
            conf = resolve(service_conf, topology.conf, cdef.conf, where=component)
            got = cls._cache[key] = cls(topology, component, conf)
        return got

    def _input_fields(self) -> tuple[str, ...]:
        fields = {self.topology.fields(sub.component, sub.stream) for sub in self.cdef.inputs}
        if self.bolt.batch != "rows" and len(fields) > 1:
            raise SparkBoltError(f"[{self.component}] batch={self.bolt.batch!r} needs every input stream to have the same fields, got {sorted(fields)}")
        return next(iter(fields)) if fields else ()

    def _collector(self, partition: int, transfer: TupleTransfer, acks: Any) -> Any:

        c = self.collectors.get(partition)
        if c is None:
            task_id = self.cdef.task_base + partition
            ctx = TopologyContext(self.topology, self.component, task_id, "spark")
            ctx.conf = self.conf.as_dict()
            ctx.add_auto_hooks()
            c = self.collectors[partition] = BoltOutputCollectorImpl(
                Router(self.topology, self.component, ctx), task_id, transfer.produce, acks, hooks=ctx.hooks
            )
        c.produce = transfer.produce
        c.runs = transfer if self.conf.transfer_runs else None
        c.acks = acks
        return c

    # -- one task run ----------------------------------------------------------------
    def run(self, batches: Iterator[Any], outlet: Outlet) -> Iterator[Any]:
        """One task run of a micro-batch: Arrow batches of source rows in, one batch of tail rows out.

        1. Decode each batch's records; a record that does not decode goes to the
           dead-letter topic with its topic, partition and offset, and is counted (poison).
        2. Run the user function on each tuple. The collector anchors and routes its
           outputs, and the tuples for each partition of a bolt's topic leave in packs, as a
           Python bolt's do (:class:`~streams.runtime.transfer.TupleTransfer`): one Kafka
           record a pack, produced through ``outlet``.
        3. After the last batch, wait for every delivery. If the broker did not take one,
           the run's acks become fails (the trees are replayed), as a Python bolt executor
           does (Storm: a tuple is acked only once its outputs are emitted).
        4. Yield the tail: committer deltas, acks XOR-coalesced per root, fails, and the
           run's counters. The driver folds the tails of every task of the micro-batch
           (:mod:`streams.spark.bolt_commit`) before any ack reaches the acker.
        """
        acks = AckBuffer(self.acker_topic, max(1, self.conf.ackers)) if self.conf.ackers > 0 else None
        stats = _RunStats()
        send = outlet.produce

        def produce(topic: str, value: bytes | None, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
            stats.records += 1
            send(topic, value, key, partition, headers)

        transfer = TupleTransfer(produce, self.topology.bolt_topics, max_tuples=self.conf.transfer_batch_size)
        for batch in batches:
            # step 1
            tuples = self._decode(batch, produce, transfer, stats, acks)
            # step 2
            if self.bolt.batch == "rows":
                self._rows(tuples, stats)
            else:
                self._frames(tuples, stats)
            transfer.flush()
        # step 3
        if not outlet.finish():
            stats.lost = outlet.lost()
            failing = len(acks.acks) if acks is not None else 0
            log.error("[%s] %d outputs lost in this task run: failing %d trees instead of acking", self.component, stats.lost, failing)
            if acks is not None:
                why = why_text(self.component, "outputs lost (the broker did not take them)")
                for root in acks.acks:
                    acks.fails.setdefault(root, why)
                acks.acks.clear()
        # step 4
        tail = _Tail()
        if self.committer is not None:
            for k, v in self.committer.fold(self.updates).items():
                tail.add(KIND_STATE, key=k.encode(), value=json.dumps(v).encode())
            self.updates = []
        if acks is not None:
            for root, val in acks.acks.items():
                if val:
                    tail.add(KIND_ACK, root=to_signed(root), val=to_signed(val))
            for root, why in acks.fails.items():
                tail.add(KIND_FAIL, value=why.encode() if why else None, root=to_signed(root))
        tail.add(KIND_STATS, value=stats.to_json())
        yield tail.batch()
        self.updates = []

    def _decode(self, batch: Any, dead_letter: Any, transfer: TupleTransfer, stats: _RunStats, acks: Any) -> list[tuple[Tuple, Any]]:
        values = batch.column("value").to_pylist()
        parts = batch.column("partition").to_pylist()
        offsets = batch.column("offset").to_pylist()
        out = []
        if offsets:
            nxt = stats.next_offsets
            for p, off in zip(parts, offsets, strict=True):
                if off >= nxt.get(p, 0):
                    nxt[p] = off + 1
        for raw, p, off in zip(values, parts, offsets, strict=True):
            try:
                envelopes = decode_tuples(raw, component=self.component, topic=self.topic, partition=p, offset=off)
            except DecodeError as exc:
                stats.poison += 1
                headers = dead_letter_headers(str(exc), component=self.component, topic=self.topic, partition=p, offset=off, attempts=0)
                dead_letter(dead_letter_topic(self.topology.name), raw or b"", None, -1, [(k, v.encode()) for k, v in headers])
                log.warning("%s", exc)
                continue
            for stream, source, source_task, _epoch, vals, anchors, _batch, _tid in envelopes:  # one tuple, or a pack's
                if stream == WARMUP_STREAM:
                    continue
                t = Tuple(vals, stream, source, source_task, anchors, self.topology.field_index(source, stream), self.topic, p, off)
                out.append((t, self._collector(p, transfer, acks)))
        return out

    def _fail(self, t: Tuple, collector: Any, stats: _RunStats, exc: BaseException) -> None:
        stats.failed += 1
        if not isinstance(exc, FailedException):
            stats.errors += 1
            log.warning("[%s] task %d failed on %s: %r", self.component, collector.task_id, t.where, exc)
        if isinstance(exc, FailedException):
            collector.fail(t, str(exc) or None)  # the collector words it as a Python bolt's fail
        else:
            collector.fail_because(t, f"{type(exc).__name__}: {exc}")

    def _rows(self, tuples: list[tuple[Tuple, Any]], stats: _RunStats) -> None:
        fn = self.bolt.fn
        clock = time.perf_counter
        for t, collector in tuples:
            start = clock()
            stats.executed += 1
            try:
                outs = list(fn(t) or ())
            except FatalError:
                raise
            except Exception as exc:
                self._fail(t, collector, stats, exc)
                stats.hist.record(clock() - start)
                continue
            for out in outs:
                self._emit(collector, t, out, stats)
            collector.ack(t)
            stats.hist.record(clock() - start)

    def _emit(self, collector: Any, t: Tuple | None, out: Any, stats: _RunStats) -> None:
        if self.committer is not None:
            values = out.values if isinstance(out, Emit) else out
            if not isinstance(values, list | tuple) or len(values) != 2:
                raise SparkBoltError(f"[{self.component}] a committer's function must return [key, delta] items, got {values!r}")
            self.updates.append((values[0], values[1]))
            return
        if isinstance(out, Emit):
            anchor = t if out.anchored else None
            if out.task is not None:
                collector.emit_direct(out.task, list(out.values), anchors=anchor, stream=out.stream)
                stats.emitted += 1
            else:
                stats.emitted += len(collector.emit(list(out.values), anchors=anchor, stream=out.stream))
        elif isinstance(out, list | tuple):
            stats.emitted += len(collector.emit(list(out), anchors=t))
        else:
            raise SparkBoltError(f"[{self.component}] the function returned {type(out).__name__}; expected a values list or an Emit")

    # -- pandas / arrow batches -----------------------------------------------------------
    def _call_frame(self, tuples: list[tuple[Tuple, Any]]) -> dict[str, list[Any]]:
        import pyarrow as pa

        cols: dict[str, list[Any]] = {f: [t.values[i] if i < len(t.values) else None for t, _ in tuples] for i, f in enumerate(self.input_fields)}
        cols["_row"] = list(range(len(tuples)))
        table = pa.table(cols)
        if self.bolt.batch == "pandas":
            result = self.bolt.fn(table.to_pandas())
            if result is None:
                return {}
            return {str(k): v for k, v in result.to_dict("list").items()}
        result = self.bolt.fn(table)
        return {} if result is None else result.to_pydict()

    def _frames(self, tuples: list[tuple[Tuple, Any]], stats: _RunStats) -> None:
        if not tuples:
            return
        start = time.perf_counter()
        try:
            self._frame_outputs(tuples, self._call_frame(tuples), stats)
            for t, collector in tuples:
                collector.ack(t)
            stats.executed += len(tuples)
            per = (time.perf_counter() - start) / len(tuples)
            for _ in tuples:
                stats.hist.record(per)
            return
        except FatalError:
            raise
        except Exception:
            pass  # isolate the rows that raise: call fn row by row
        for one in tuples:
            t, collector = one
            start = time.perf_counter()
            stats.executed += 1
            try:
                out = self._call_frame([one])
            except FatalError:
                raise
            except Exception as exc:
                self._fail(t, collector, stats, exc)
            else:
                self._frame_outputs([one], out, stats)
                collector.ack(t)
            stats.hist.record(time.perf_counter() - start)

    def _frame_outputs(self, tuples: list[tuple[Tuple, Any]], out: dict[str, list[Any]], stats: _RunStats) -> None:
        if not out:
            return
        if "_row" not in out:
            raise SparkBoltError(f"[{self.component}] the {self.bolt.batch} function's result has no _row column (got {sorted(out)})")
        n = len(out["_row"])
        streams = out.get("_stream") or [DEFAULT_STREAM] * n
        declared = self.cdef.streams
        for i in range(n):
            stream = streams[i] or DEFAULT_STREAM
            if stream not in declared:
                raise FatalError(f"[{self.component}] emit on undeclared stream {stream!r} (declared: {sorted(declared)})")
            fields = declared[stream].fields
            try:
                values = [out[f][i] for f in fields]
            except KeyError as exc:
                raise SparkBoltError(f"[{self.component}] the {self.bolt.batch} function's result lacks field {exc} of stream {stream!r}") from None
            r = out["_row"][i]
            if r is None or r != r or int(r) < 0:  # null, NaN or -1: unanchored
                t, collector = None, tuples[0][1]
            else:
                t, collector = tuples[int(r)]
            self._emit(collector, t, Emit(_plain(values), stream, anchored=t is not None), stats)


def _plain(values: list[Any]) -> list[Any]:
    """Numpy scalars -> Python values (the envelope is JSON)."""
    return [v.item() if hasattr(v, "item") else v for v in values]
