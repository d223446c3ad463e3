"""update_state_by_key and state_query on the checkpointed state: exactly once in the state, queries acked at once, replays re-emitted."""

from __future__ import annotations

from streams import KafkaSpout, RecordTranslator, Topology
from streams.api import StreamBuilder
from streams.testing import Faults, LocalTopology, run_topology


def topology(repartition: bool) -> Topology:
    b = StreamBuilder()
    rows = b.new_stream(KafkaSpout(translator=RecordTranslator("row")), name="rows").map(lambda r: r.split(","))
    updates, queries = rows.branch(lambda r: r[0] == "set", lambda r: r[0] == "get")
    table = updates.map_to_pair(lambda r: (r[1], int(r[2]))).update_state_by_key(0, lambda old, v: old + v)
    changes = table.to_pair_stream()
    (changes.repartition(1) if repartition else changes).set_output("squall.{topology}.changes")
    queries.map_to_pair(lambda r: (r[1], r[0])).state_query(table).map_values(lambda p: p[1]).set_output("squall.{topology}.answers")
    return b.build("table", {"topology.state.checkpoint.interval.ms": 1000})


def test_a_query_is_acked_at_once_and_an_update_at_the_next_checkpoint() -> None:
    with LocalTopology(topology(False), config={"squall.spout.tree.records": 1}) as local:  # a tree per record
        local.feed("rows", ["set,a,1"])
        local.settle()
        local.feed("rows", ["get,a", "set,a,2"])
        local.advance(0.05)  # time for acks to flush, not for a checkpoint
        outcomes = local.result().input_outcomes("rows")
        assert outcomes[1] == ["acked"] and outcomes[2] == []  # the query's tree is done; the update waits for its checkpoint
        local.settle()
    result = local.result()
    assert result.outputs["squall.table.answers"] == {"a": 1}
    assert result.outputs["squall.table.changes"] == {"a": 3}


def test_an_update_replayed_by_a_failure_downstream_is_applied_once_and_forwarded_again() -> None:
    faults = Faults().fail("repartition3", where=lambda t: t[0] == "a", times=1)
    result = run_topology(topology(True), {"rows": ["set,a,1", "set,b,5"]}, faults=faults, config={"squall.spout.tree.records": 1})
    assert result.input_outcomes("rows") == [["failed", "acked"], ["acked"]]
    assert result.outputs["squall.table.changes"] == {"a": 1, "b": 5}  # once in the state, and the replay still reached the output
    forwarded = [e.values for e in result.emitted[("update_state_by_key2", "s2")]]
    assert forwarded.count(("a", 1)) == 2 and forwarded.count(("b", 5)) == 1  # "a" again for its replay: the state, not a second update
