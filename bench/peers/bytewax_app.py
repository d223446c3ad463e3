"""bytewax doing the benchmark workloads as its docs recommend (a Dataflow of operators, KafkaSource to KafkaSink).

    python -m bytewax.run "bench.peers.bytewax_app:get_flow('WORKLOAD', 'BOOTSTRAP', 'INPUT', 'OUTPUT')" -r RECOVERY_DIR -s 1 -b 0

Run from its own virtualenv (bench/peers/venvs.py). Recovery is on: the state of every
stateful step is snapshotted to SQLite in ``RECOVERY_DIR`` every second (``-s 1``), with
the input offsets, so a restart resumes from the last snapshot (at least once on the output).

Word count: decode -> ``flat_map`` words -> ``key_on`` the word -> ``stateful_map`` running
count. Flights: parse -> ``key_on`` the carrier -> ``stateful_map`` running (flights,
dep_delay). Windows (flights per carrier per hour of scheduled departure, as
examples/flights_windows.py): ``fold_window`` over an ``EventClock`` (scheduled departure,
2 hours of system time waited) and 1-hour ``TumblingWindower``; a late flight is written as
``late <carrier> <hour>`` + 1. Output: JSON ``{"key", <fields>, "ts"}`` per update.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import bytewax.operators as op
import bytewax.operators.windowing as win
from bytewax.connectors.kafka import KafkaSink, KafkaSinkMessage, KafkaSource
from bytewax.dataflow import Dataflow

from bench.peers.workloads import HOUR_S, LAG_S, flight, hour_of, scheduled_flight, words

CONSUMER = {"fetch.wait.max.ms": "50", "session.timeout.ms": "6000"}
PRODUCER = {"linger.ms": "50"}


def get_flow(workload: str, bootstrap: str, inp: str, out: str) -> Dataflow:
    """The dataflow of ``workload`` (``wordcount``, ``flights`` or ``windows``) from topic ``inp`` to ``out``."""
    flow = Dataflow(f"bench-{workload}")
    msgs = op.input("in", flow, KafkaSource([bootstrap], [inp], add_config=CONSUMER))
    records = op.map("decode", msgs, lambda m: json.loads(m.value))
    if workload == "wordcount":
        pairs = op.flat_map("split", records, lambda r: [(w, r["ts"]) for w in words(r["v"])])
        counts = op.stateful_map("count", op.key_on("word", pairs, lambda p: p[0]), count)
        results = op.map("encode", counts, encode)
    elif workload == "flights":
        parsed = op.filter_map("parse", records, lambda r: None if (f := flight(r["v"])) is None else (f[0], f[1], r["ts"]))
        totals = op.stateful_map("total", op.key_on("carrier", parsed, lambda f: f[0]), total)
        results = op.map("encode", totals, encode)
    elif workload == "windows":
        results = windows(records)
    else:
        raise SystemExit(f"[bytewax peer] no {workload} workload")
    op.output("out", results, KafkaSink([bootstrap], out, add_config=PRODUCER))
    return flow


def count(n: int | None, pair: tuple[str, float]) -> tuple[int, dict[str, Any]]:
    """The running count of a word: the new state and the update to write."""
    n = (n or 0) + 1
    return n, {"count": n, "ts": pair[1]}


def total(state: list[int] | None, f: tuple[str, int, float]) -> tuple[list[int], dict[str, Any]]:
    """The running (flights, dep_delay) of a carrier."""
    n, d = state or [0, 0]
    state = [n + 1, d + f[1]]
    return state, {"flights": state[0], "dep_delay": state[1], "ts": f[2]}


def encode(kv: tuple[str, dict[str, Any]]) -> KafkaSinkMessage[bytes, bytes]:
    key, value = kv
    return KafkaSinkMessage(key.encode(), json.dumps({"key": key, **value}).encode())


def windows(records: Any) -> Any:
    """Flights per carrier per hour in event-time tumbling windows; late flights counted apart."""
    flights = op.filter_map("parse", records, lambda r: scheduled_flight(r["v"]))
    keyed = op.key_on("carrier", flights, lambda f: f[0])
    clock = win.EventClock(lambda f: datetime.fromtimestamp(f[1], UTC), wait_for_system_duration=timedelta(seconds=LAG_S))
    windower = win.TumblingWindower(length=timedelta(seconds=HOUR_S), align_to=datetime(2000, 1, 1, tzinfo=UTC))
    out = win.fold_window(
        "hourly", keyed, clock, windower, lambda: ["", 0], lambda acc, f: [hour_of(f[1]), acc[1] + 1], lambda a, b: [a[0] or b[0], a[1] + b[1]]
    )
    closed = op.map("closed", out.down, lambda kv: KafkaSinkMessage(None, json.dumps({"key": f"{kv[0]} {kv[1][1][0]}", "flights": kv[1][1][1]}).encode()))
    late = op.map("late", out.late, lambda kv: KafkaSinkMessage(None, json.dumps({"key": f"late {kv[0]} {hour_of(kv[1][1][1])}", "flights": 1}).encode()))
    return op.merge("results", closed, late)
