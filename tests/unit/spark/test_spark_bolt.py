"""SparkBolt's processor, the driver's commit bookkeeping, source planning and txid store,
without Spark or a broker: the processor is the exact function Spark runs in ``mapInArrow``,
its Kafka records caught by an outlet that keeps them."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from acker.ledger import Ledger
from examples.wordcount import words as tokenise
from streams.spark.bolt import KIND_ACK, KIND_FAIL, KIND_STATE, KIND_STATS, BoltProcessor, _Tail, to_signed, to_unsigned
from streams.spark.bolt_commit import fold_tails
from streams.spark.committer import SparkCommitter
from streams.spark.source import ARROW_SCHEMA, cap_ranges, plan_ranges
from streams.state import TransactionalState, open_backend
from streams.wire.codec import Envelope, RunAnchors, decode_tuples, encode_tuple
from streams.wire.naming import component_topic
from tests.unit.sim import apply_ops, bolt_acks

TOPOLOGIES = Path(__file__).resolve().parents[2] / "integration" / "topologies"
NAME = "t1"


def source_batch(lines: list[str], roots: list[int], edges: list[int]) -> pa.RecordBatch:
    values = [encode_tuple("default", "lines", 0, [line], {r: e}, epoch=1) for line, r, e in zip(lines, roots, edges, strict=True)]
    n = len(values)
    return pa.RecordBatch.from_pydict(
        {
            "key": [None] * n,
            "value": values,
            "topic": [component_topic(NAME, "split")] * n,
            "partition": [i % 2 for i in range(n)],
            "offset": list(range(n)),
            "timestamp_ms": [0] * n,
        },
        schema=ARROW_SCHEMA,
    )


class Outlet:
    """Keeps what a task run produces; ``lose`` records the broker will not take."""

    def __init__(self, lose: int = 0) -> None:
        self.records: list[tuple[str, bytes, bytes | None, int, Any]] = []
        self.to_lose = lose
        self.finished = 0

    def produce(self, topic: str, value: bytes | None, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
        assert not self.finished, "a record produced after the run waited for its deliveries"
        self.records.append((topic, bytes(value or b""), key, partition, headers))

    def finish(self) -> bool:
        self.finished += 1
        return self.to_lose == 0

    def lost(self) -> int:
        return self.to_lose


def run(processor: BoltProcessor, batch: pa.RecordBatch, outlet: Outlet | None = None) -> dict[str, list[Any]]:
    """The tail rows of one task run (``out["records"]``: what it produced)."""
    outlet = outlet or Outlet()
    out: dict[str, list[Any]] = {"records": outlet.records}
    for b in processor.state().run(iter([batch]), outlet):
        assert outlet.finished == 1  # the tail leaves only after every delivery was waited for
        for k, v in b.to_pydict().items():
            out.setdefault(k, []).extend(v)
    return out


def processor(file: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str) -> BoltProcessor:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return BoltProcessor(str(TOPOLOGIES / file), NAME, {"topology.acker.executors": 1}, {}, "split" if "wordcount" in file else "count")


LINES = ["the cat sat", "on the mat", "", "a dog's life"]
ROOTS = [0xFFFF_0000_0000_0001, 12, 13, 14]  # one root above 2**63: signed longs in Spark
EDGES = [0xF000_0000_0000_0005, 21, 22, 23]


def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file: str = "spark_wordcount.py", **env: str) -> BoltProcessor:
    monkeypatch.delenv("SQUALL_TEST_FLAKY_DIR", raising=False)
    monkeypatch.delenv("SQUALL_TEST_SPARK_BATCH", raising=False)
    from streams.spark.bolt import _ProcessorState

    _ProcessorState._cache.clear()
    return processor(file, monkeypatch, tmp_path, **env)


def tuples_out(out: dict[str, list[Any]]) -> list[tuple[str, Envelope]]:
    """Every tuple the task run produced, with its topic (a record holds one tuple or a pack)."""
    return [(t, env) for t, v, _, _, _ in out["records"] for env in decode_tuples(v, component="count", topic=t, partition=0, offset=0)]


def complete_trees(out: dict[str, list[Any]], roots: list[int], edges: list[int]) -> list[Any]:
    """Drive the spout's inits, the processor's acks and an ack of every output tuple
    (as the count bolt would) into a real ledger; return what it decides."""
    ledger = Ledger(30)
    apply_ops(ledger, [[0, r, e, 0] for r, e in zip(roots, edges, strict=True)])
    ops = []
    for kind, root, val in zip(out["kind"], out["root"], out["val"], strict=True):
        if kind == KIND_ACK:
            ops.append([1, to_unsigned(root), to_unsigned(val)])
        elif kind == KIND_FAIL:
            ops.append([2, to_unsigned(root)])
    ops += bolt_acks([v for _, v, _, _, _ in out["records"]])
    return apply_ops(ledger, ops)


@pytest.mark.parametrize("batch", ["rows", "pandas", "arrow"])
def test_processor_anchors_outputs_and_every_tree_completes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: str) -> None:
    p = fresh(tmp_path, monkeypatch, SQUALL_TEST_SPARK_BATCH=batch)
    out = run(p, source_batch(LINES, ROOTS, EDGES))
    records = tuples_out(out)
    words = [env[4][0] for _, env in records]
    assert sorted(words) == sorted(["the", "cat", "sat", "on", "the", "mat", "a", "dog's", "life"])
    assert {t for t, _ in records} == {component_topic(NAME, "count")}
    for _, env in records:  # each word carries its line's root, in a run (or alone) with a fresh, non-zero edge id
        ((root, edge),) = env[5].items()
        if isinstance(env[5], RunAnchors):
            edge = env[5].edge
        assert root in ROOTS and edge not in EDGES and edge != 0
    acks = [k for k in out["kind"] if k == KIND_ACK]
    assert len(acks) == len(ROOTS)  # one coalesced ack per root
    decided = complete_trees(out, ROOTS, EDGES)
    assert sorted((d.root, d.acked) for d in decided) == sorted((r, True) for r in ROOTS)
    stats = [json.loads(v) for k, v in zip(out["kind"], out["value"], strict=True) if k == KIND_STATS]
    assert stats[0]["executed"] == len(LINES) and stats[0]["emitted"] == len(words)
    assert stats[0]["next_offsets"] == {"0": 3, "1": 4}  # committed to the bolt's group for lag


@pytest.mark.parametrize("pack", [None, 1])
def test_words_for_one_partition_of_count_leave_in_packs_as_a_python_bolts_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pack: int | None) -> None:
    """One Kafka record a pack of tuples per partition of count's topic, not a record a word
    (streams.runtime.transfer); ``squall.transfer.batch.size`` 1 turns packing off."""
    fresh(tmp_path, monkeypatch)
    overrides: dict[str, Any] = {"topology.acker.executors": 1} | ({} if pack is None else {"squall.transfer.batch.size": pack})
    p = BoltProcessor(str(TOPOLOGIES / "spark_wordcount.py"), NAME, overrides, {}, "split")
    lines = [f"word{i % 7} other{i % 5} more" for i in range(200)]
    out = run(p, source_batch(lines, list(range(1, 201)), list(range(1001, 1201))))
    tuples = tuples_out(out)
    assert sorted(env[4][0] for _, env in tuples) == sorted(w for line in lines for w in tokenise(line))
    records = out["records"]
    if pack == 1:
        assert len(records) == len(tuples) == 600
    else:
        assert len(records) < len(tuples) / 10  # count's 2 partitions, packs of up to the default size
    decided = complete_trees(out, list(range(1, 201)), list(range(1001, 1201)))
    assert sorted((d.root, d.acked) for d in decided) == [(r, True) for r in range(1, 201)]


@pytest.mark.parametrize("batch", ["rows", "pandas", "arrow"])
def test_rows_that_raise_fail_their_tree_and_the_rest_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: str) -> None:
    lines = [f"line number {i}" for i in range(40)]
    flaky = [zlib.crc32(line.encode()) % 10 == 0 for line in lines]
    assert 0 < sum(flaky) < len(lines)
    roots = [1000 + i for i in range(40)]
    edges = [2000 + i for i in range(40)]
    p = fresh(tmp_path, monkeypatch, SQUALL_TEST_SPARK_BATCH=batch, SQUALL_TEST_FLAKY_DIR=str(tmp_path))
    out = run(p, source_batch(lines, roots, edges))
    if batch != "rows":
        # the whole-frame call raised at the first flaky line (using up its first delivery);
        # the row-by-row retry then isolates the rest
        flaky[flaky.index(True)] = False
    failed = {to_unsigned(r) for k, r in zip(out["kind"], out["root"], strict=True) if k == KIND_FAIL}
    assert failed == {r for r, f in zip(roots, flaky, strict=True) if f}
    whys = [v.decode() for k, v in zip(out["kind"], out["value"], strict=True) if k == KIND_FAIL]
    assert len(whys) == len(failed) and all(w.startswith("[split] ValueError: first delivery") for w in whys)  # as a Python bolt's fail
    decided = {d.root: d.acked for d in complete_trees(out, roots, edges)}
    assert decided == {r: not f for r, f in zip(roots, flaky, strict=True)}
    # the failed lines emitted nothing: only the good lines' words went out
    n_words = sum(len(tokenise(line)) for line, f in zip(lines, flaky, strict=True) if not f)
    assert len(tuples_out(out)) == n_words
    # second delivery (the replay) succeeds
    out2 = run(p, source_batch(lines, roots, edges))
    assert KIND_FAIL not in out2["kind"]


def test_poison_record_is_dead_lettered_with_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = fresh(tmp_path, monkeypatch)
    batch = source_batch(["ok line"], [5], [6])
    bad = pa.RecordBatch.from_pydict({**batch.to_pydict(), "value": [b"\xff not json"], "offset": [41]}, schema=ARROW_SCHEMA)
    out = run(p, bad)
    ((topic, value, _, _, headers),) = out["records"]
    assert topic == f"squall.{NAME}.__dlq" and value == b"\xff not json"
    named = {k: v.decode() for k, v in headers}
    assert named["squall.component"] == "split" and named["squall.offset"] == "41" and named["squall.partition"] == "0"
    (stats,) = [json.loads(v) for k, v in zip(out["kind"], out["value"], strict=True) if k == KIND_STATS]
    assert stats["poison"] == 1 and stats["records"] == 1


def test_committer_rows_become_state_not_tuples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = fresh(tmp_path, monkeypatch, "spark_committer.py", SQUALL_TEST_STATE_DB=str(tmp_path / "s.db"))
    out = run(p, source_batch(["the cat the"], [7], [8]))
    state = {json.loads(k): json.loads(v) for kind, k, v in zip(out["kind"], out["key"], out["value"], strict=True) if kind == KIND_STATE}
    assert state == {"the": 2, "cat": 1}
    assert out["records"] == []
    assert [to_unsigned(r) for k, r in zip(out["kind"], out["root"], strict=True) if k == KIND_ACK] == [7]


def test_signed_round_trip() -> None:
    for v in (0, 1, 2**63 - 1, 2**63, 2**64 - 1):
        s = to_signed(v)
        assert -(2**63) <= s < 2**63 and to_unsigned(s) == v


def test_the_driver_folds_tails_xoring_acks_across_tasks_and_a_fail_wins() -> None:
    def tail(acks: dict[int, int], fails: dict[int, str], records: int, state: list[int]) -> pa.RecordBatch:
        t = _Tail()
        for v in state:
            t.add(KIND_STATE, key=b'"x"', value=json.dumps(v).encode())
        for r, v in acks.items():
            t.add(KIND_ACK, root=to_signed(r), val=to_signed(v))
        for r, why in fails.items():
            t.add(KIND_FAIL, value=why.encode() or None, root=to_signed(r))
        t.add(KIND_STATS, value=json.dumps({"records": records, "lost": 0}).encode())
        return t.batch()

    top = 2**64 - 1  # unsigned 64-bit ids travel as signed longs
    a = tail({1: 0b01, 2: 0b11, top: 5}, {}, 3, [1])
    b = tail({1: 0b10, 3: 0b1, top: 5}, {2: "[spark] ValueError: bad"}, 2, [2])
    c = tail({}, {2: "", 4: ""}, 0, [])
    m = fold_tails([a, b, c])
    assert m.acks == {1: 0b11, 3: 0b1, top: 0} and m.fails == {2: "[spark] ValueError: bad", 4: ""}
    assert m.records == 5 and m.state == {'"x"': [1, 2]} and len(m.stats) == 3


def test_lost_outputs_turn_the_task_s_acks_into_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record the broker did not take: every tree of the run is failed (replayed), none acked,
    as a Python bolt executor does when a delivery fails."""
    p = fresh(tmp_path, monkeypatch)
    out = run(p, source_batch(LINES, ROOTS, EDGES), Outlet(lose=1))
    assert KIND_ACK not in out["kind"]
    failed = {to_unsigned(r): v.decode() for k, r, v in zip(out["kind"], out["root"], out["value"], strict=True) if k == KIND_FAIL}
    assert set(failed) == set(ROOTS) and all("[split]" in why and "outputs lost" in why for why in failed.values())
    (stats,) = [json.loads(v) for k, v in zip(out["kind"], out["value"], strict=True) if k == KIND_STATS]
    assert stats["lost"] == 1 and stats["records"] == len(out["records"]) > 0
    decided = {d.root: d.acked for d in complete_trees(out, ROOTS, EDGES)}
    assert decided == dict.fromkeys(ROOTS, False)


def test_spark_committer_skips_a_replayed_batch(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    c = SparkCommitter(TransactionalState(open_backend(url), "wc.counts"))
    r1 = c.commit(1, c.fold([("a", 1), ("b", 2), ("a", 3)]))
    assert (r1.written, r1.skipped) == (2, 0)
    replay = c.commit(1, c.fold([("a", 1), ("b", 2), ("a", 3)]))  # same txid: already applied
    assert (replay.written, replay.skipped) == (0, 2)
    c.commit(2, c.fold([("a", 10)]))
    state = TransactionalState(open_backend(url), "wc.counts")  # a new process sees the same state
    assert state.items() == {"a": 14, "b": 2}
    assert state.get("a") == 14 and state.last_txid() == 2
    assert [(t, w, s) for _, t, w, s in state.commits()] == [(1, 2, 0), (1, 0, 2), (2, 1, 0)]


def test_cap_ranges_is_proportional_and_bounded() -> None:
    start = {"t": {"0": 0, "1": 100}}
    end = {"t": {"0": 1000, "1": 400}}
    capped = cap_ranges(start, end, 650)
    moved = {p: capped["t"][p] - start["t"][p] for p in ("0", "1")}
    assert sum(moved.values()) <= 650 and moved["0"] > moved["1"] > 0
    assert cap_ranges(start, end, 10_000) == end
    tiny = cap_ranges({"t": {"0": 0, "1": 0}}, {"t": {"0": 1, "1": 1}}, 1)
    assert sum(tiny["t"].values()) == 1  # always progress


def test_plan_ranges_caps_tasks_and_covers_every_range() -> None:
    start = {"a": {str(p): 0 for p in range(5)}, "b": {"0": 7}}
    end = {"a": {str(p): 10 * (p + 1) for p in range(5)}, "b": {"0": 7}}
    bins = plan_ranges(start, end, 2)
    assert len(bins) == 2
    flat = sorted(r for b in bins for r in b)
    assert flat == sorted(("a", p, 0, 10 * (p + 1)) for p in range(5))  # b[0] is empty: no range
    loads = [sum(hi - lo for _, _, lo, hi in b) for b in bins]
    assert max(loads) - min(loads) <= 50
    assert plan_ranges(start, start, 4) == []


def test_source_options_errors_name_the_source_and_the_option() -> None:
    from streams import ConfigError
    from streams.spark.source import KafkaStreamReader

    with pytest.raises(ConfigError, match=r"\[squall-kafka\] option bootstrap.servers is required"):
        KafkaStreamReader({"subscribe": "a"})
    with pytest.raises(ConfigError, match=r"\[squall-kafka\] option subscribe"):
        KafkaStreamReader({"bootstrap.servers": "x:1"})
    with pytest.raises(ConfigError, match=r"maxOffsetsPerTrigger='lots' is not a number"):
        KafkaStreamReader({"bootstrap.servers": "x:1", "subscribe": "a", "maxOffsetsPerTrigger": "lots"})
    r = KafkaStreamReader({"kafka.bootstrap.servers": "x:1", "subscribe": "a, b", "kafka.fetch.wait.max.ms": "80", "maxTasks": "3"})
    assert r.topics == ["a", "b"] and r.tasks == 3
    assert r.consumer_conf["fetch.wait.max.ms"] == "80" and r.consumer_conf["bootstrap.servers"] == "x:1"
    state = r.__getstate__()
    assert state["_ends"] is None and state["_meta"] is None  # Kafka clients are never pickled


def test_spark_bolt_rejects_bad_declarations() -> None:
    from streams import TopologyBuilder
    from streams.spark import SparkBolt
    from streams.spark.exceptions import SparkBoltError

    with pytest.raises(SparkBoltError, match=r"\[split\] SparkBolt batch must be one of"):
        TopologyBuilder().set_bolt("split", SparkBolt(lambda t: [], batch="polars"))
    with pytest.raises(SparkBoltError, match=r"\[split\] SparkBolt needs a callable"):
        TopologyBuilder().set_bolt("split", SparkBolt("split"))  # type: ignore[arg-type]


def test_driver_folds_each_batch_snapshot_once_and_forgets_it() -> None:
    from streams.config import resolve
    from streams.model.loader import load_topology
    from streams.monitoring.stats import ExecutorStats
    from streams.runtime.executor import ExecutorEnv
    from streams.spark.runtime import SparkBoltExecutor

    topology = load_topology(TOPOLOGIES / "spark_wordcount.py", NAME)
    ex = SparkBoltExecutor(ExecutorEnv(topology=topology, component="split", conf=resolve({}), bootstrap="127.0.0.1:1", workdir=Path("/tmp")))

    class Board:
        def __init__(self) -> None:
            self.latest: dict[str, dict[str, Any]] = {}

        def poll(self, timeout: float) -> int:
            return 0

    board = Board()
    ex._board = board

    def batch(n: int) -> dict[str, Any]:
        s = ExecutorStats(NAME, "split", "bolt", "w1")
        s.inc("executed", n)
        s.hist("execute_latency").record(0.001)
        return s.snapshot(final=True)

    board.latest.update({"b0": batch(10), "b1": batch(5), "other": {**batch(99), "component": "count"}})
    ex._fold_bolt_stats()
    assert board.latest == {}  # bounded: nothing kept between calls
    board.latest["b2"] = batch(7)
    ex._fold_bolt_stats()
    assert ex.bolt_stats.counters["executed"] == 22
    assert ex.bolt_stats.hists["execute_latency"].count == 3
    ex.producer.flush(0)


class _Frame:
    """What ``foreachBatch`` hands the driver: a DataFrame of the tasks' tail rows."""

    def __init__(self, *tails: pa.RecordBatch) -> None:
        self.tails = tails
        self.collected = 0

    def toArrow(self) -> pa.Table:  # PySpark's name
        self.collected += 1
        return pa.Table.from_batches(list(self.tails))


class _Delivery:
    made: list[_Delivery] = []
    deliver = True

    def __init__(self, conf: Any, where: str, flush_timeout_s: float) -> None:
        self.where = where
        self.records: list[tuple[str, bytes, Any]] = []
        _Delivery.made.append(self)

    def produce(self, topic: str, value: bytes, key: bytes | None = None, partition: int = -1, headers: Any = None) -> None:
        self.records.append((topic, value, partition))

    def finish(self) -> bool:
        return _Delivery.deliver


def test_the_driver_sends_one_op_per_root_then_the_stats_and_raises_when_the_acker_ops_are_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    """BoltBatchCommit: the micro-batch's tails, folded across tasks, become one acker op per
    root (a fail wins over acks), a stats snapshot with the tasks' counters, and a commit of the
    next input offsets to the bolt's group; acker ops the broker did not take stop the query."""
    from streams.spark import bolt_commit
    from streams.spark import clients as spark_clients
    from streams.spark.exceptions import SparkSinkError
    from streams.wire.acker import decode_ops

    committed: list[Any] = []

    class Consumer:
        def commit(self, offsets: list[Any], asynchronous: bool) -> None:
            committed.extend((tp.topic, tp.partition, tp.offset) for tp in offsets)

    monkeypatch.setattr(bolt_commit, "Delivery", _Delivery)
    monkeypatch.setattr(spark_clients, "consumer", lambda conf: Consumer())
    _Delivery.made, _Delivery.deliver = [], True

    def tail(acks: dict[int, int], fails: list[int], counters: dict[str, Any]) -> pa.RecordBatch:
        t = _Tail()
        for r, v in acks.items():
            t.add(KIND_ACK, root=to_signed(r), val=to_signed(v))
        for r in fails:
            t.add(KIND_FAIL, value=b"[split] ValueError: bad", root=to_signed(r))
        t.add(KIND_STATS, value=json.dumps(counters).encode())
        return t.batch()

    processor = BoltProcessor("t.py", NAME, {}, {}, "split", {"bootstrap.servers": "x:1"})
    commit = bolt_commit.BoltBatchCommit(processor, ackers=1, worker="w1")
    frame = _Frame(
        tail({11: 0b01, 12: 0b100}, [], {"executed": 3, "records": 2, "next_offsets": {"0": 40}}),
        tail({11: 0b10, 13: 0b1}, [12], {"executed": 2, "failed": 1, "records": 1, "next_offsets": {"1": 7}}),
    )
    commit(frame, 5)
    assert frame.collected == 1  # the batch's tasks run once
    (delivery,) = _Delivery.made
    (acker_record, stats_record) = delivery.records
    assert acker_record[0] == f"squall.{NAME}.__acker"
    ops = decode_ops(acker_record[1], component="test", topic=acker_record[0], partition=0, offset=0)
    by_root = {op[1]: op for op in ops}
    assert set(by_root) == {11, 12, 13} and by_root[11][:3] == [1, 11, 0b11] and by_root[13][:3] == [1, 13, 0b1] and by_root[12][0] == 2
    stats = json.loads(stats_record[1])
    assert stats_record[0] == f"squall.{NAME}.__metrics" and stats["counters"]["executed"] == 5 and stats["counters"]["records_out"] == 3
    assert committed == [(component_topic(NAME, "split"), 0, 40), (component_topic(NAME, "split"), 1, 7)]

    _Delivery.deliver = False
    with pytest.raises(SparkSinkError, match=r"\[split\] batch 6: acker ops could not be delivered"):
        commit(_Frame(tail({21: 1}, [], {"executed": 1})), 6)
