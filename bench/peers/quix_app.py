"""Quix Streams doing the benchmark workloads idiomatically (Application + StreamingDataFrame).

    python -m bench.peers.quix_app WORKLOAD BOOTSTRAP INPUT OUTPUT GROUP GUARANTEE STATE_DIR

Word count: split -> group_by(word) -> stateful running count. Flights: parse ->
group_by(carrier) -> stateful running (flights, delay). Output: the running value per key.
Embedded-broker settings (see bench/README.md): session 6 s, fetch wait 50 ms, linger 50 ms,
explicit retention on the topics.
"""

from __future__ import annotations

import sys
from typing import Any

from quixstreams import Application
from quixstreams.models import TopicConfig

from bench.peers.workloads import flight, words


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
    source = app.topic(inp, value_deserializer="json", config=cfg)
    sink = app.topic(out, value_serializer="json", config=cfg)
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


if __name__ == "__main__":
    main()
