"""``python -m bench ack-cpu``: both variants of both workloads ack every record, and the table says per hop what acking adds (never a speed check)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.__main__ import main
from bench.ack_cpu import HOPS, WORKLOADS, Variant


def test_the_ack_cpu_bench_acks_every_record_of_both_variants_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "ack-cpu.json"
    main(["ack-cpu", "--records", "600", "--chunk", "200", "--json", str(out)])  # (each chunk asserts every record was acked)
    result = json.loads(out.read_text())
    assert set(result["workloads"]) == {"wordcount", "flights"}
    for w in result["workloads"].values():
        assert set(w["acked_us_per_record"]) == set(HOPS) == set(w["unacked_us_per_record"])
        assert w["unacked_us_per_record"]["acker"] == 0.0 < w["acked_us_per_record"]["acker"]  # no acker without ackers
        assert w["cpu_ratio"] > 0


def test_an_acked_variant_completes_trees_through_the_acker_and_an_unacked_one_acks_at_emit() -> None:
    lines = WORKLOADS["wordcount"].lines(120)
    acked, unacked = Variant(WORKLOADS["wordcount"], True), Variant(WORKLOADS["wordcount"], False)
    for v in (acked, unacked):
        v.feed(lines)
        assert v.acked_records == 120 and v.spout.committable() == {(v.topic, 0): 120}  # every record acked, every offset committable
    assert acked.applied > 0 and len(acked.core.inflight) == 0  # the acker's results settled every tree
    assert unacked.applied == 0 and unacked.acks is None
