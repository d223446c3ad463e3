"""faust-streaming doing the benchmark workloads idiomatically (agents + a Table).

    python -m bench.peers.faust_app WORKLOAD BOOTSTRAP INPUT OUTPUT APP_ID

Two agents: the first splits/parses and sends to a keyed repartition topic; the second
keeps a Table per key and writes the running value. The hard-coded 1.5 s fetch wait is
patched to 50 ms (acker.faust_compat), and the session timeout is 6 s.
"""

from __future__ import annotations

import sys
from typing import Any

import faust

from acker import patch_fetch_wait
from bench.peers.workloads import flight, words


def main() -> None:
    workload, bootstrap, inp, out, app_id = sys.argv[1:6]
    patch_fetch_wait(50)
    app = faust.App(
        app_id,
        broker=f"kafka://{bootstrap}",
        store="memory://",
        topic_partitions=1,
        web_enabled=False,
        broker_session_timeout=6,
        consumer_auto_offset_reset="earliest",
        producer_linger_ms=50,
    )
    source = app.topic(inp, value_serializer="json")
    keyed = app.topic(f"{app_id}-keyed", key_type=str, value_serializer="json", partitions=1)
    sink = app.topic(out, value_serializer="json")
    table = app.Table("totals", default=int, partitions=1)

    @app.agent(source)
    async def split(stream: Any) -> None:
        async for r in stream:
            if workload == "wordcount":
                for w in words(r["v"]):
                    await keyed.send(key=w, value={"k": w, "d": 0, "ts": r["ts"]})
            else:
                f = flight(r["v"])
                if f is not None:
                    await keyed.send(key=f[0], value={"k": f[0], "d": f[1], "ts": r["ts"]})

    @app.agent(keyed)
    async def count(stream: Any) -> None:
        async for r in stream:
            k = r["k"]
            table[k] += 1
            if workload == "wordcount":
                await sink.send(value={"key": k, "count": table[k], "ts": r["ts"]})
            else:
                table[k + "#d"] += r["d"]
                await sink.send(value={"key": k, "flights": table[k], "dep_delay": table[k + "#d"], "ts": r["ts"]})

    from faust.worker import Worker

    Worker(app, loglevel="WARNING", quiet=True).execute_from_commandline()


if __name__ == "__main__":
    main()
