"""``python -m bench wire``: the bytes a word-count line costs between Squall's components (issue 51).

The acked word count (examples/wordcount.py) runs once over the Shakespeare lines on a fresh
one-node Apache Kafka per variant of ``--compression`` (``default``: the topology's own
``squall.kafka.compression.type``; else that codec). Per source line it reports:

* **produced**: the bytes of record keys and values Squall's executors handed their producers
  (``squall_produced_bytes_total``: tuples, acker ops and results, changelog, ledgers, stats), before
  batching and compression;
* **stored**: the bytes of the record batches the broker wrote for the topology's topics, all but
  the input the user produced (the ``.log`` segments under its log dir: what crossed the network
  and sits on its disk, compressed, with Kafka's batch headers). The broker deletes and compacts
  nothing during the run (``log.retention.check.interval.ms`` one day, the cleaner off), so every
  byte written is still there;

and, per topic, where the stored bytes went. The word count's throughput and CPU per line come
from the same run (one run: compare within it).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from bench.common import print_table, write_json
from bench.compare import expected, load_input, normalise, run_squall
from service.brokers import ApacheKafka

KEEP_EVERYTHING = {"log.retention.check.interval.ms": str(24 * 3600 * 1000), "log.cleaner.enable": "false"}
"""Broker settings for the run: no segment is deleted and none compacted, so the log dir holds every byte written."""


def stored_by_topic(log_dirs: Path, prefix: str, skip: str) -> dict[str, int]:
    """Bytes of ``.log`` segments per topic whose name starts with ``prefix``, ``skip`` aside (a partition dir is ``<topic>-<p>``)."""
    out: dict[str, int] = {}
    for root, _dirs, files in os.walk(log_dirs):
        topic = Path(root).name.rpartition("-")[0]
        if not topic.startswith(prefix) or topic == skip:
            continue
        size = sum(os.stat(os.path.join(root, f)).st_size for f in files if f.endswith(".log"))
        out[topic] = out.get(topic, 0) + size
    return out


def run(args: Any) -> dict[str, Any]:
    """One word-count run per compression variant; print the tables and return (and write) the JSON."""
    lines = load_input("wordcount", args.smoke)
    exp = normalise("wordcount", expected("wordcount", lines))
    result: dict[str, Any] = {"lines": len(lines), "variants": {}}
    rows = []
    for variant in args.compression:
        workdir = Path(tempfile.mkdtemp(prefix="squall-bench-wire-"))
        overrides = {} if variant == "default" else {"squall.kafka.compression.type": variant}
        with ApacheKafka(nodes=1, workdir=workdir / "kafka", config=KEEP_EVERYTHING) as kafka:
            topics: dict[str, int] = {}

            def inspect(job: Any, kafka: ApacheKafka = kafka, topics: dict[str, int] = topics) -> dict[str, Any]:
                topics.update(stored_by_topic(kafka.workdir, f"squall.{job.name}.", f"squall.{job.name}.lines"))
                return {}

            row = run_squall(kafka.bootstrap, "wordcount", lines, exp, True, None, 30.0, 900.0, workdir / "data", overrides=overrides, inspect=inspect)
        stored = sum(topics.values())
        per_topic = {t.split(".", 2)[2]: b / len(lines) for t, b in sorted(topics.items(), key=lambda kv: -kv[1])}
        result["variants"][variant] = {
            **row,
            "lines_per_s": len(lines) / row["seconds"],
            "cpu_us_per_line": 1e6 * row["cpu_s"] / len(lines),
            "produced_bytes_per_line": row["produced_bytes"] / len(lines),
            "stored_bytes": stored,
            "stored_bytes_per_line": stored / len(lines),
            "stored_bytes_per_line_by_topic": per_topic,
        }
        r = result["variants"][variant]
        rows.append(
            [
                variant,
                f"{r['produced_bytes_per_line']:,.0f}",
                f"{r['stored_bytes_per_line']:,.0f}",
                f"{r['lines_per_s']:,.0f}",
                f"{r['cpu_us_per_line']:,.1f}",
                "yes" if r.get("correct") else "NO",
            ]
        )
        print(f"[wire] {variant}: stored bytes per line by topic: " + ", ".join(f"{t} {b:,.0f}" for t, b in per_topic.items()), flush=True)
    print_table(
        f"wire: the acked word count, {len(lines):,} lines, Apache Kafka (one node)",
        ["compression", "produced B/line", "stored B/line", "lines/s", "CPU us/line", "exact"],
        rows,
    )
    write_json(args.json, result)
    return result
