"""Quix Streams doing the benchmark workloads idiomatically (Application + StreamingDataFrame).

    python -m bench.peers.quix_app WORKLOAD BOOTSTRAP INPUT OUTPUT GROUP GUARANTEE STATE_DIR

Word count: split -> group_by(word) -> stateful running count. Flights: parse ->
group_by(carrier) -> stateful running (flights, delay). Output: the running value per key.
Windows (flights per carrier per hour of scheduled departure, examples/flights_windows.py):
the scheduled departure as the message timestamp -> group_by(carrier) -> 1-hour tumbling
windows with a 2-hour grace -> count -> final; a late flight (``on_late``) is written as
``late <carrier> <hour>`` + 1, as Squall's late stream does. Output: each closed window once.
Join (examples/flights_join.py): the flights looked up in the airlines and airports tables and
joined with the weather of their origin and hour, all with ``join_asof``, counted per label.
Embedded-broker settings (see bench/README.md): session 6 s, fetch wait 50 ms, linger 50 ms,
explicit retention on the topics.
"""

from __future__ import annotations

import json
import sys
from typing import Any, cast

from quixstreams import Application
from quixstreams.models import TopicConfig

from bench.peers.workloads import flight, scheduled_flight, words


def main() -> None:
    workload, bootstrap, inp, out, group, guarantee, state_dir = sys.argv[1:8]
    if guarantee not in ("at-least-once", "exactly-once"):
        raise SystemExit(f"[quix peer] unknown processing guarantee {guarantee!r}")
    app = Application(
        broker_address=bootstrap,
        consumer_group=group,
        auto_offset_reset="earliest",
        processing_guarantee="exactly-once" if guarantee == "exactly-once" else "at-least-once",
        state_dir=state_dir,
        consumer_extra_config={"session.timeout.ms": 6000, "fetch.wait.max.ms": 50},
        producer_extra_config={"linger.ms": 50},
    )
    cfg = TopicConfig(num_partitions=1, replication_factor=1, extra_config={"retention.ms": "-1", "retention.bytes": "-1"})
    sink = app.topic(out, value_serializer="json", config=cfg)
    if workload == "windows":
        windows(app, app.topic(inp, value_deserializer="json", config=cfg, timestamp_extractor=scheduled_ms), sink)
        app.run()
        return
    if workload == "join":
        join(app, app.topic(inp, value_deserializer="json", config=cfg, timestamp_extractor=hour_ms), sink)
        app.run()
        return
    source = app.topic(inp, value_deserializer="json", config=cfg)
    sdf = app.dataframe(source)
    if workload == "wordcount":
        sdf = sdf.apply(lambda r: [{"word": w, "ts": r["ts"]} for w in words(r["v"])], expand=True)
        sdf = sdf.group_by("word")

        def count(r: dict[str, Any], state: Any) -> dict[str, Any]:
            n = state.get("n", 0) + 1
            state.set("n", n)
            return {"key": r["word"], "count": n, "ts": r["ts"]}

        sdf = sdf.apply(count, stateful=True)
    else:
        sdf = sdf.apply(lambda r: {"f": flight(r["v"]), "ts": r["ts"]}).filter(lambda r: r["f"] is not None)
        sdf = sdf.apply(lambda r: {"carrier": r["f"][0], "delay": r["f"][1], "ts": r["ts"]})
        sdf = sdf.group_by("carrier")

        def total(r: dict[str, Any], state: Any) -> dict[str, Any]:
            n, d = state.get("n", 0) + 1, state.get("d", 0) + r["delay"]
            state.set("n", n)
            state.set("d", d)
            return {"key": r["carrier"], "flights": n, "dep_delay": d, "ts": r["ts"]}

        sdf = sdf.apply(total, stateful=True)
    sdf.to_topic(sink)
    app.run()


def scheduled_ms(value: Any, headers: Any, timestamp: int, timestamp_type: Any) -> int:
    """A flight's scheduled departure as its event time (ms); the header and bad lines keep the record's own."""
    parsed = scheduled_flight(value["v"])
    return timestamp if parsed is None else int(parsed[1] * 1000)


def hour_ms(value: Any, headers: Any, timestamp: int, timestamp_type: Any) -> int:
    """The join workload's event time: a flight's or an observation's hour (ms); a table row's is 0 (before everything)."""
    from examples.flights_join import hour_s

    line = value["v"]
    if line.startswith(("flight,", "weather,")):
        return int(hour_s(line.rsplit(",", 1)[1]) * 1000)
    return 0


def join(app: Application, source: Any, sink: Any) -> None:
    """examples/flights_join.py's job with Quix's ``join_asof``: the flights looked up in the airlines and
    airports tables (left joins), then joined with the weather of their origin and hour (inner), counted per label."""
    from examples.flights_join import label, parse

    sdf = app.dataframe(source)
    rec = sdf.apply(lambda r: {**parse(r["v"]), "sent": r["ts"]})
    airlines = rec.filter(lambda r: r["kind"] == "airline").group_by(lambda r: r["carrier"], name="airline")
    airports = rec.filter(lambda r: r["kind"] == "airport").group_by(lambda r: r["faa"], name="airport")
    weather = rec.filter(lambda r: r["kind"] == "weather").group_by(lambda r: r["at"], name="weather")
    flights = rec.filter(lambda r: r["kind"] == "flight").group_by(lambda r: r["carrier"], name="carrier")
    named = flights.join_asof(airlines, how="left", on_merge=lambda f, a: {**f, "airline": a["name"] if a else None}, name="airlines")
    by_origin = named.group_by(lambda r: r["origin"], name="origin")
    placed = by_origin.join_asof(airports, how="left", on_merge=lambda f, a: {**f, "origin_name": a["name"] if a else None}, name="airports")
    by_hour = placed.group_by(lambda r: r["at"], name="hour")
    joined = by_hour.join_asof(weather, how="inner", on_merge=lambda f, w: {"label": label(f, w), "sent": f["sent"]}, name="weathers")
    counted = joined.group_by(lambda r: r["label"], name="label")

    def count(r: dict[str, Any], state: Any) -> dict[str, Any]:
        n = state.get("n", 0) + 1
        state.set("n", n)
        return {"key": r["label"], "value": n, "ts": r["sent"]}

    counted.apply(count, stateful=True).to_topic(sink)


def windows(app: Application, source: Any, sink: Any) -> None:
    from bench.peers.workloads import HOUR_S, LAG_S, hour_of

    producer = app.get_producer()

    def late(value: Any, key: Any, timestamp_ms: int, late_by_ms: int, start: int, end: int, *_: Any) -> bool:
        carrier = key.decode() if isinstance(key, bytes) else str(key)
        producer.produce(sink.name, json.dumps({"key": f"late {carrier} {hour_of(start / 1000)}", "flights": 1}).encode())
        return False  # counted, not logged

    sdf = app.dataframe(source)
    sdf = sdf.apply(lambda r: scheduled_flight(r["v"])).filter(lambda f: f is not None)
    sdf = sdf.apply(lambda f: {"carrier": f[0]}).group_by("carrier")
    sdf = sdf.tumbling_window(duration_ms=int(HOUR_S * 1000), grace_ms=int(LAG_S * 1000), on_late=cast(Any, late)).count().final()
    sdf = sdf.apply(lambda w, key, *_: {"key": f"{key} {hour_of(w['start'] / 1000)}", "flights": w["value"]}, metadata=True)
    sdf.to_topic(sink)


if __name__ == "__main__":
    main()
