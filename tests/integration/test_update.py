"""``squall update`` (issue 51): new code rolled onto running topologies under load, on Apache Kafka, as a user runs it.

One supervisor runs the stateful and the exactly-once word counts while a separate producer feeds
both. Each is updated to a compatible new version (the stateful one gains a bolt); an incompatible
change is refused, naming the component; the stateful one is rolled back with ``--to-version``;
then a version whose worker crashes at start-up stops its roll and is rolled back by the
supervisor. Through the compatible rolls no tree fails and nothing is replayed, neither in the
stateful count nor in the exactly-once one, whose bolt workers hand their batches to their
next lives; at the end both counts are exact.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from streams.state import TransactionalState, open_backend
from streams.state.keyvalue import is_internal
from tests.integration.conftest import assert_exact, corpus_slice, direct_count
from tests.integration.service_harness import EXACTLY_ONCE, STATEFUL, Cluster

pytestmark = pytest.mark.broker

AUDIT = '''

class Audit(BasicBolt):
    """Version 2's new bolt: sees every word, emits nothing."""

    def declare_output_fields(self, declarer: Any) -> None:
        pass

    def execute(self, tuple: Tuple, collector: BasicOutputCollector) -> None:  # noqa: A002
        pass
'''

CRASH = '''

class Split(Split):  # type: ignore[no-redef]
    """Version 3's split cannot start (a missing setting, say)."""

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        raise RuntimeError("version 3 needs SPLIT_MODE, which is not set")
'''


def versions(tmp: Path) -> dict[str, Path]:
    """The stateful word count's new versions, written as a user would edit the file."""
    v1 = STATEFUL.read_text()
    head, tail = v1.split("def topology() -> Topology:")
    out = {
        "v2": head
        + AUDIT
        + "\n\ndef topology() -> Topology:"
        + tail.replace('    b.set_state_output("count"', '    b.set_bolt("audit", Audit(), 1).shuffle_grouping("split")\n    b.set_state_output("count"'),
        "bad": v1.replace("Count(), 2, num_tasks=4", "Count(), 2, num_tasks=8"),
        "v3": head + CRASH + "\n\ndef topology() -> Topology:" + tail,
    }
    assert out["v2"] != v1 and out["bad"] != v1
    paths = {}
    for key, text in out.items():
        paths[key] = tmp / key / "wordcount_stateful.py"
        paths[key].parent.mkdir()
        paths[key].write_text(text)
    return paths


def kv_counts(url: str, name: str) -> dict[str, int]:
    import json

    backend = open_backend(url)
    try:
        return {str(json.loads(k)): json.loads(v) for _, k, v in backend.kv_items(f"{name}.count") if not is_internal(k)}
    finally:
        backend.close()


def quiet(st: dict[str, Any]) -> tuple[int, int, int]:
    """What a roll must leave at zero: trees failed, replays, dead letters."""
    return st["trees_failed"], sum(st["replays"].values()), sum(c.get("dead_lettered", 0) for c in st["components"].values())


def test_rolling_updates_rollback_and_a_crashing_version_under_load(cluster: Cluster, corpus: Path, tmp_path: Path) -> None:
    src = corpus_slice(corpus, tmp_path / "in.txt", 30_000)
    new = versions(tmp_path)
    tag = uuid.uuid4().hex[:6]
    kv, eo = f"kv{tag}", f"eo{tag}"
    kv_url, eo_url = f"sqlite:///{tmp_path / 'kv.db'}", f"sqlite:///{tmp_path / 'eo.db'}"
    cluster.serve("s1")
    assert cluster.squall("submit", str(STATEFUL), "--name", kv, "-c", f"squall.state.url={kv_url}").stdout.startswith(f"submitted {kv}: 4 workers")
    assert cluster.squall("submit", str(EXACTLY_ONCE), "--name", eo, "-c", f"squall.state.url={eo_url}").stdout.startswith(f"submitted {eo}: 3 workers")
    cluster.wait_ready(["s1"], 7)
    feeders = [cluster.feed(f"squall.{n}.lines", src, seconds=150) for n in (kv, eo)]
    time.sleep(5)

    # 1. A compatible update of each, under load: one worker at a time, nothing replayed.
    started = time.monotonic()
    out = cluster.squall("update", kv, str(new["v2"]))
    took = time.monotonic() - started
    assert out.stdout.strip() == f"updated {kv} from version 1 to 2: components added: audit", out.stderr
    assert "4 of 4 workers on version 2" in out.stderr  # the progress lines, on stderr
    eo_v2 = tmp_path / "eo2" / "wordcount_exactly_once.py"
    eo_v2.parent.mkdir()
    eo_v2.write_text(EXACTLY_ONCE.read_text().replace('WORD = re.compile(r"[a-z\']+")', 'WORD = re.compile(r"[a-z\']+")  # version 2'))
    assert cluster.squall("update", eo, str(eo_v2)).stdout.strip() == f"updated {eo} from version 1 to 2: same components and streams"
    st = cluster.status(kv)
    assert st["version"] == 2 and st["update"] is None and st["worker_versions"] == {f"w{i}": 2 for i in range(4)}
    assert st["components"]["audit"]["executors"] == 1 and st["last_update"].startswith("updated from version 1 to 2")
    assert quiet(st) == (0, 0, 0), st["replays"]
    eo_st = cluster.status(eo)
    assert eo_st["worker_versions"] == {f"w{i}": 2 for i in range(3)}
    # its bolt workers handed their batches on (streams.runtime.handoff): no batch replayed
    assert quiet(eo_st) == (0, 0, 0) and eo_st["batches"]["replayed"] == 0, (eo_st["replays"], eo_st["batches"])
    assert eo_st["batches"]["committed"] > 0
    listed = cluster.squall("list").stdout
    assert any(line.split()[0] == kv and line.split()[-1] == "2" for line in listed.splitlines()[1:]), listed
    print(f"rolled 4 workers in {took:.1f} s")

    # 2. An incompatible change is refused, naming the component; nothing changes.
    bad = cluster.squall("update", kv, str(new["bad"]), check=False)
    assert bad.returncode == 2 and bad.stderr.startswith(f"error: [{kv}] update refused: [count] its task count would change from 4 to 8"), bad.stderr
    assert "--drain-all" in bad.stderr and cluster.status(kv)["version"] == 2

    # 3. A rollback to version 1.
    assert cluster.squall("update", kv, "--to-version", "1").stdout.strip() == f"updated {kv} from version 2 to 1: components removed: audit"
    st = cluster.status(kv)
    assert st["version"] == 1 and set(st["worker_versions"].values()) == {1} and "audit" not in st["components"]
    assert quiet(st) == (0, 0, 0), st["replays"]

    # 4. A version that cannot start: its roll stops, and the supervisor rolls it back.
    crash = cluster.squall("update", kv, str(new["v3"]), check=False)
    assert crash.returncode == 2, crash.stdout + crash.stderr
    assert f"error: [{kv}] update to version 3 failed, rolled back to version 1: worker w" in crash.stderr
    assert "version 3 needs SPLIT_MODE, which is not set" in crash.stderr
    st = cluster.status(kv)
    assert st["version"] == 1 and set(st["worker_versions"].values()) == {1}
    assert st["last_update"].startswith("update to version 3 failed and was rolled back to version 1")
    assert any(e["event"] == "crashed" for e in st["errors"])
    shown = cluster.squall("status", kv).stdout
    assert "last update: update to version 3 failed" in shown and "version 1" in shown.splitlines()[0]

    # 5. Every line counted exactly once, by both.
    for f in feeders:
        assert f.wait(240) == 0
    truth = direct_count(src)
    for name in (kv, eo):
        cluster.wait_committed(name, 30_000, timeout_s=240)
    time.sleep(3)
    assert_exact(kv_counts(kv_url, kv), truth, lambda: cluster.spout_totals(kv))
    assert_exact(dict(TransactionalState(open_backend(eo_url), f"{eo}.counts").items()), truth)
    st = cluster.status(eo)
    print(f"exactly once through the roll: batches {st['batches']}, trees failed {st['trees_failed']}, replays {st['replays']}")
    assert quiet(st) == (0, 0, 0) and st["batches"]["replayed"] == 0
