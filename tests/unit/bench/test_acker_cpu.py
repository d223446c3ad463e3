"""``python -m bench acker-cpu`` runs without a broker and completes every tree (never a speed check)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.__main__ import main


def test_acker_cpu_bench_completes_every_tree_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "acker-cpu.json"
    main(["acker-cpu", "--trees", "3000", "--repeats", "1", "--json", str(out)])
    result = json.loads(out.read_text())
    assert result["trees"] == 3000
    assert {c["persist_after_s"] for c in result["cases"].values()} == {2.0, 0.0}
    assert all(c["cpu_us_per_tree"] > 0 for c in result["cases"].values())  # (one_run asserts every tree completed)
