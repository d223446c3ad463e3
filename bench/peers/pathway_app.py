"""Pathway doing the benchmark workloads as its docs recommend (a table read from Kafka, ``groupby().reduce()``, written to Kafka).

    python -m bench.peers.pathway_app WORKLOAD BOOTSTRAP INPUT OUTPUT GROUP STATE_DIR

Run from its own virtualenv (bench/peers/venvs.py). Word count: ``flatten`` the words of each
line -> ``groupby(word).reduce(count)``. Flights: parse -> ``groupby(carrier).reduce(count,
sum of dep_delay)``. Windows: ``windowby`` 1-hour ``tumbling`` windows of the scheduled
departure per carrier (``instance``) -> ``reduce(count)``; with no cutoff, a window takes
every flight of its hour however late (none is counted apart), and its count is updated. The output is Pathway's update stream (JSON with ``diff`` +1 for a new
value, -1 for a retracted one, and ``time``); the bench keeps the insertions, so the final
value per key is compared with the direct result. Persistence (``STATE_DIR``) keeps the
input offsets and the operators' state, so a restart resumes.
"""

from __future__ import annotations

import sys
from typing import Any

import pathway as pw

from bench.peers.workloads import HOUR_S, flight, hour_of, scheduled_flight, words


class Record(pw.Schema):  # type: ignore[misc]  # pathway is in its own virtualenv: Any to mypy here
    """An input record: the line and its produce time (seconds since the epoch)."""

    v: str
    ts: float


def line_words(line: str) -> tuple[str, ...]:
    return tuple(words(line))


def window_key(carrier: str, start: float) -> str:
    """The windows workload's output key, ``"<carrier> <hour>"``."""
    return f"{carrier} {hour_of(start)}"


def main() -> None:
    workload, bootstrap, inp, out, group, state_dir = sys.argv[1:7]
    settings = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": "6000",
        "fetch.wait.max.ms": "50",
    }
    table = pw.io.kafka.read(settings, topic=inp, schema=Record, format="json", autocommit_duration_ms=50)
    result: Any
    if workload == "wordcount":
        split = table.select(word=pw.apply_with_type(line_words, tuple[str, ...], pw.this.v), ts=pw.this.ts).flatten(pw.this.word)
        result = split.groupby(pw.this.word).reduce(key=pw.this.word, count=pw.reducers.count(), ts=pw.reducers.max(pw.this.ts))
    elif workload == "flights":
        parsed = table.select(f=pw.apply_with_type(flight, tuple[str, int] | None, pw.this.v), ts=pw.this.ts).filter(pw.this.f.is_not_none())
        rows = parsed.select(carrier=pw.unwrap(pw.this.f)[0], delay=pw.unwrap(pw.this.f)[1], ts=pw.this.ts)
        result = rows.groupby(pw.this.carrier).reduce(
            key=pw.this.carrier, flights=pw.reducers.count(), dep_delay=pw.reducers.sum(pw.this.delay), ts=pw.reducers.max(pw.this.ts)
        )
    elif workload == "windows":
        parsed = table.select(f=pw.apply_with_type(scheduled_flight, tuple[str, float] | None, pw.this.v), ts=pw.this.ts).filter(pw.this.f.is_not_none())
        rows = parsed.select(carrier=pw.unwrap(pw.this.f)[0], at=pw.unwrap(pw.this.f)[1], ts=pw.this.ts)
        hourly = rows.windowby(pw.this.at, window=pw.temporal.tumbling(duration=HOUR_S, origin=0.0), instance=pw.this.carrier)
        result = hourly.reduce(
            key=pw.apply_with_type(window_key, str, pw.this._pw_instance, pw.this._pw_window_start), flights=pw.reducers.count(), ts=pw.reducers.max(pw.this.ts)
        )
    else:
        raise SystemExit(f"[pathway peer] no {workload} workload")
    pw.io.kafka.write(result, {"bootstrap.servers": bootstrap, "linger.ms": "50"}, topic_name=out, format="json")
    persistence = pw.persistence.Config(pw.persistence.Backend.filesystem(state_dir))
    pw.run(monitoring_level=pw.MonitoringLevel.NONE, persistence_config=persistence)


if __name__ == "__main__":
    main()
