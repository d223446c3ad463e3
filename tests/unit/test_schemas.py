"""What the encoders really produce validates against schemas/ (and bad shapes do not)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from acker.durable import DurableLedger
from acker.ledger import Ledger
from streams.monitoring.stats import ExecutorStats
from streams.runtime.transfer import TupleTransfer
from streams.wire.acker import encode_ops, encode_results
from streams.wire.codec import encode_head, encode_marker, encode_pack, encode_rooted, encode_tuple, encode_values

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / name).read_text())
    return loaded


def check(name: str, raw: bytes) -> None:
    jsonschema.validate(json.loads(raw), schema(name))


def test_tuple_envelope() -> None:
    check("tuple.schema.json", encode_tuple("default", "split", 3, ["word", 1], {2**64 - 1: 5}, epoch=1_764_232_345_123))
    check("tuple.schema.json", encode_tuple("__warmup", "__system", -1, [], {}, epoch=0))  # a SparkBolt's warm-up record
    check("tuple.schema.json", encode_marker("split", [3, 4], 1_764_232_345_123))  # a new life's epoch marker
    check(
        "tuple.schema.json", encode_tuple("default", "split", 3, ["word"], {7: 5}, None, (2**31 - 1, 12, 2**32 - 1), epoch=9)
    )  # a stateful topology's tuple id
    for bad in (b'[2,"s","c",0,5,[],[-1,2]]', b'[2,"s","c",0,-5,[],[]]', b'[1,"s","c",0,[],[]]'):  # a bad anchor, a negative epoch, version 1
        with pytest.raises(jsonschema.ValidationError):
            check("tuple.schema.json", bad)


def test_a_pack_of_runs() -> None:
    sent: list[bytes] = []
    t = TupleTransfer(lambda topic, value, key=None, partition=-1: sent.append(value), {"b"}, max_tuples=10)
    head = encode_head("default", "split", 3, 9)
    t.emit_run("b", 0, head, 2**64 - 1, encode_values(["to"]))
    t.emit_run("b", 0, head, 2**64 - 1, encode_values(["be"]))
    t.produce("b", encode_tuple("default", "split", 3, ["x"], {7: 5, 8: 6}, epoch=9), partition=0)  # in two trees: an envelope
    t.emit_run("b", 0, head, 0, encode_values(["untracked"]))
    t.emit_run("b", 0, head, 5, encode_values(["in a batch"]), (4, 1))
    t.emit_run("b", 0, head, 5, encode_values(["and its run"]), (4, 1))
    t.flush()
    (pack,) = sent
    assert pack.startswith(b"[6,")
    check("tuple.schema.json", pack)
    for bad in (
        b"[6]",  # no segment
        b'[6,[["s","c",0,5],1,2,[]]]',  # a run of no tuple
        b'[6,[["s","c",0,5],-1,2,[[]]]]',  # a negative root
        b'[6,[["s","c",0,5],1,2]]',  # a run without its tuples
        b'[6,[["s","c",0,5],1,2,[5]]]',  # values not a list
    ):
        with pytest.raises(jsonschema.ValidationError):
            check("tuple.schema.json", bad)


def test_a_pack_of_tuples() -> None:
    one = encode_rooted("default", "split", 3, 9, ["to"], 7, 5)
    two = encode_rooted("default", "split", 3, 9, ["be"], 7, 6)
    check("tuple.schema.json", encode_pack([one, two, encode_tuple("default", "split", 3, ["x"], {}, epoch=9)]))
    check("tuple.schema.json", encode_pack([one, encode_tuple("other", "split", 3, ["x"], {}, (4, 1), (1, 2, 3), epoch=9), two]))  # three runs
    check("tuple.schema.json", b"[3," + one + b"," + two + b"]")  # a pack of whole envelopes, written before version 4
    assert encode_pack([one]) == one  # a pack of one is the envelope itself
    for bad in (
        b"[3]",  # empty
        b'[3,[2,"s","c",0,-5,[],[]]]',  # a bad envelope inside
        b'[3,[3,[2,"s","c",0,5,[],[]]]]',  # a pack in a pack
        b'[4,["s","c",0,5]]',  # a head without items
        b'[4,["s","c",0,5],[]]',  # no items
        b'[4,["s","c",0,-5],[[[],[]]]]',  # a negative epoch
        b'[4,["s","c",0,5],[[[],[-1,2]]]]',  # a bad anchor
    ):
        with pytest.raises(jsonschema.ValidationError):
            check("tuple.schema.json", bad)


def test_acker_ops_results_and_changelog() -> None:
    check("acker-ops.schema.json", encode_ops([[0, 1, 2, 3], [1, 2**64 - 1, 7], [2, 4], [3, 5]]))
    check("acker-ops.schema.json", b"[]")  # an epoch marker on the acker topic
    with pytest.raises(jsonschema.ValidationError):
        check("acker-ops.schema.json", b"[[9, 1]]")
    check("ack-result.schema.json", encode_results([[0, 12, 0.25], [1, 13, 30.0]]))
    ledger = DurableLedger(Ledger(30))
    ledger.apply(7, [[0, 12345, 5, 2], [1, 999, 3]])
    ledger.apply(8, [[1, 12345, 5]])  # completes 12345, which was never persisted
    ledger.apply(9, [[0, 999, 3 ^ 4, 1]])
    records = ledger.changelog()
    assert records
    for _root, value in records:
        check("acker-changelog.schema.json", value or b"null")
    ledger.apply(10, [[1, 999, 4]])  # 999 was persisted: it leaves a done record
    (done,) = ledger.changelog()
    check("acker-changelog.schema.json", done[1] or b"null")
    assert json.loads(done[1] or b"null") == [10 << 20]
    ledger.apply(11, [[1, 555, 1], [2, 555]])  # an ack, then a fail before the init
    (failed,) = ledger.changelog()
    check("acker-changelog.schema.json", failed[1] or b"null")
    assert json.loads(failed[1] or b"null")[4] is True
    restored = DurableLedger(Ledger(30))
    restored.restore(555, json.loads(failed[1] or b"null"))
    (out,) = restored.apply(12, [[0, 555, 1, 6]])  # the init fails it at once, after a restore too
    assert out.spout_task == 6 and not out.acked


def test_stats_snapshot() -> None:
    s = ExecutorStats("t", "split", "bolt", "w0")
    s.inc("acked", 3)
    s.hist("execute_latency").record(0.002)
    s.partition_lag["t[0]"] = 5
    s.errors["exception"] = {"ZeroDivisionError": 2}
    jsonschema.validate(json.loads(json.dumps(s.snapshot())), schema("stats.schema.json"))
    s.errors["bogus"] = {"E": 1}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(json.dumps(s.snapshot())), schema("stats.schema.json"))


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.json")), ids=lambda p: p.name)
def test_every_schema_is_a_valid_draft_2020_12_schema(path: Path) -> None:
    jsonschema.Draft202012Validator.check_schema(json.loads(path.read_text()))


def test_control_record_and_events() -> None:
    from service.control.record import TopologyRecord, audited, kill, rebalance, set_debug

    rec = TopologyRecord.new("wc", "def topology(): ...", "wc.py", {"topology.workers": 3}, now=10.0)
    check("control.schema.json", rec.encode())
    moved = rebalance(rec, 11.0, 2, {"count": 4}, {"count": 4, "lines": 2})
    check("control.schema.json", moved.encode())
    check("control.schema.json", kill(moved, 5.0, 12.0).encode())
    assert TopologyRecord.decode(moved.encode()) == moved
    traced = audited(set_debug(moved, True, 2.5, 13.0), "debug", "ann (ui, 127.0.0.1)", 13.0, "on at 2.5%")
    check("control.schema.json", traced.encode())
    assert TopologyRecord.decode(traced.encode()) == traced
    with pytest.raises(jsonschema.ValidationError):
        check("control.schema.json", traced.model_copy(update={"debug": {"on": True, "sampling_pct": 300}}).encode())
    with pytest.raises(jsonschema.ValidationError):
        check("control.schema.json", b'{"name": "wc", "source": "", "file_name": "wc.py", "status": "PAUSED"}')
    stopped = {"topology": "wc", "event": "stopped", "supervisor": "s1", "worker": 0, "exit_code": 0, "at": 1.5}
    check("event.schema.json", json.dumps(stopped).encode())
    crashed = {**stopped, "event": "crashed", "exit_code": -9, "components": "lines,__acker", "log_tail": "...", "gave_up": False}
    check("event.schema.json", json.dumps(crashed).encode())
    started = {"topology": "wc", "event": "started", "supervisor": "s1", "worker": 0, "pid": 7, "version": 3, "code": 2, "tasks": [["count", 0]], "at": 1.0}
    check("event.schema.json", json.dumps(started).encode())
    with pytest.raises(jsonschema.ValidationError):
        check("event.schema.json", json.dumps({**started, "code": 0}).encode())
    refused = {"topology": "wc", "event": "refused", "supervisor": "s2", "worker": 1, "components": "count", "version": 1, "reason": "[wc] ...", "at": 2.0}
    check("event.schema.json", json.dumps(refused).encode())


def test_coordinator_state_and_batch_system_tuples() -> None:
    from streams.transactional.coordinator import BatchCoordinator, CoordinatorState

    c = BatchCoordinator(CoordinatorState(), opaque=True, max_pending=2, batch_records=10)
    a = c.next_action({("squall.t.lines", 0): 25, ("squall.t.lines", 1): 3}, starts={})
    assert a is not None
    c.emitted(a.batch)
    c.batch_acked(a.batch.txid, a.batch.attempt)
    commit = c.next_action({}, starts={})
    assert commit is not None
    c.commit_started(commit.batch)
    check("coordinator.schema.json", json.dumps(c.snapshot()).encode())
    assert CoordinatorState.from_json(c.snapshot()).to_json() == c.snapshot()  # round-trips
    check("tuple.schema.json", encode_tuple("__batch_end", "split", 2, [4, 1, 17], {5: 9}, (4, 1), epoch=77))  # an end marker
    check("tuple.schema.json", encode_tuple("__commit", "lines", 0, [4, 1], {6: 3}, (4, 1), epoch=12))  # a commit tuple
    with pytest.raises(jsonschema.ValidationError):
        check("tuple.schema.json", b'[2,"s","c",0,1,[],[],[0]]')


def test_spout_ledger() -> None:
    from streams.kafka.source import KafkaMessageId
    from streams.monitoring.spout_ledger import TaskLedger

    ledger = TaskLedger("lines", 1)
    ledger.emitted_tracked(KafkaMessageId("squall.t.lines", 1, 7))
    ledger.failed_tree(KafkaMessageId("squall.t.lines", 1, 7), "timeout")
    ledger.emitted_tracked(KafkaMessageId("squall.t.lines", 1, 7))
    ledger.set_emitted(2)
    check("ledger.schema.json", json.dumps(ledger.to_json()).encode())
    assert TaskLedger.from_json(ledger.to_json()).to_json() == ledger.to_json()  # round-trips
    with pytest.raises(jsonschema.ValidationError):
        check("ledger.schema.json", json.dumps({**ledger.to_json(), "replayed": {"fail": 1}}).encode())


def test_worker_plan_schema_is_the_model_s_and_a_real_plan_validates(tmp_path: Path) -> None:
    from service.control.scheduling import WorkerPlan, worker_plan
    from streams.config import resolve
    from streams.model.loader import load_topology

    assert_generated("worker-plan.schema.json", WorkerPlan)
    examples = Path(__file__).resolve().parents[2] / "examples"
    topology = load_topology(examples / "wordcount.py")
    plan = worker_plan(examples / "wordcount.py", topology, resolve(topology.conf), "127.0.0.1:9092", tmp_path, control=True, metrics_port=9500)
    check("worker-plan.schema.json", plan.to_json().encode())
    assert WorkerPlan.read(_write(tmp_path / "plan.json", plan.to_json())) == plan
    with pytest.raises(jsonschema.ValidationError):
        check("worker-plan.schema.json", json.dumps({**json.loads(plan.to_json()), "workers": [[["count", "0"]]]}).encode())
    with pytest.raises(jsonschema.ValidationError):
        check("worker-plan.schema.json", json.dumps({**json.loads(plan.to_json()), "shutdown_timeout_sec": 3}).encode())


def assert_generated(name: str, model: type[BaseModel]) -> None:
    """The schema file is the model's own (so the two cannot drift)."""
    on_file = schema(name)
    generated = model.model_json_schema()
    assert {k: v for k, v in on_file.items() if k not in ("$schema", "$id", "title", "description")} == {
        k: v for k, v in generated.items() if k not in ("title", "description")
    }, f"schemas/{name} is out of date: regenerate it from {model.__name__}.model_json_schema()"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
