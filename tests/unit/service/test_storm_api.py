"""The Storm UI API's views and routing, without a broker: every response validates against the OpenAPI file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from service.exceptions import ControlError
from service.query.views import pretty
from service.supervisor.storm_api import StormApi
from streams.config import KEYS, resolve

SPEC = yaml.safe_load((Path(__file__).resolve().parents[3] / "schemas" / "storm-ui-api.openapi.yaml").read_text())


def check(schema: str, body: Any) -> None:
    jsonschema.Draft202012Validator({"$ref": f"#/components/schemas/{schema}", "components": SPEC["components"]}).validate(body)


def comp(kind: str, **extra: Any) -> dict[str, Any]:
    base = {
        "kind": kind,
        "emitted": 10,
        "transferred": 12,
        "acked": 9,
        "failed": 1,
        "executed": 0 if kind == "spout" else 10,
        "executors": 1,
        "tasks": 2,
        "capacity": 0.25,
        "execute_latency_avg_s": None if kind == "spout" else 0.0004,
        "process_latency_avg_s": None if kind == "spout" else 0.002,
        "complete_latency_avg_s": 0.0515 if kind == "spout" else None,
        "lag_partitions": {"squall.wc.lines[0]": 5, "squall.wc.lines[1]": 0} if kind == "spout" else {"squall.wc.split[0]": 3},
        "last_error": None,
    }
    return {**base, **extra}


REPORT = {"component": "split", "at": 990.0, "host": "vm", "type": "ZeroDivisionError", "message": "division by zero", "traceback": "Traceback ...\n  x"}
STATUS = {
    "name": "wc",
    "status": "ACTIVE",
    "uptime_s": 3725.0,
    "workers": 2,
    "message_timeout_secs": 30,
    "trees_acked": 9,
    "trees_failed": 1,
    "components": {"lines": comp("spout"), "split": comp("bolt", last_error=REPORT)},
    "debug": True,
    "sampling_pct": 1.0,
    "configuration": resolve({"topology.workers": 2}, {"topology.debug": True}).as_dict(),
}
ROWS = [{"name": "wc", "status": "ACTIVE", "uptime_s": 3725.0, "workers": 2, "executors": 3, "tasks": 6}]


def status(name: str) -> dict[str, Any]:
    if name != "wc":
        raise ControlError(f"[{name}] no such topology (see: squall list)")
    return STATUS


def api() -> StormApi:
    committed = {("squall.wc.lines", 0): 100}
    return StormApi(
        lambda: ROWS,
        status,
        lambda name: [REPORT],
        lambda name, spout, tps: {tp: committed[tp] for tp in tps if tp in committed},
        lambda: (2, 32, 2),
        "squall 0.1.0",
        clock=lambda: 1000.0,
    )


def test_every_path_answers_storms_field_names_and_validates() -> None:
    a = api()
    code, cluster = a.handle("/api/v1/cluster/summary")
    assert code == 200 and (cluster["supervisors"], cluster["slotsFree"], cluster["executorsTotal"], cluster["tasksTotal"]) == (2, 30, 3, 6)
    check("ClusterSummary", cluster)
    code, summary = a.handle("/api/v1/topology/summary")
    assert summary["topologies"][0]["uptime"] == "1h 2m 5s" and summary["topologies"][0]["id"] == "wc"
    check("TopologySummary", summary)
    code, page = a.handle("/api/v1/topology/wc")
    check("TopologyPage", page)
    (spout,), (bolt,) = page["spouts"], page["bolts"]
    assert (spout["spoutId"], spout["completeLatency"], spout["lastError"]) == ("lines", "51.500", "")
    assert (bolt["boltId"], bolt["executeLatency"], bolt["processLatency"], bolt["capacity"]) == ("split", "0.400", "2.000", "0.250")
    assert bolt["lastError"] == "ZeroDivisionError: division by zero" and bolt["errorLapsedSecs"] == 10
    assert page["topologyStats"][-1]["acked"] == 9 and page["msgTimeout"] == 30
    code, component = a.handle("/api/v1/topology/wc/component/split")
    check("ComponentPage", component)
    assert component["componentType"] == "bolt" and component["componentErrors"][0]["errorTime"] == 990_000
    assert component["componentErrors"][0]["error"].startswith("ZeroDivisionError: division by zero\nTraceback")
    check("ComponentPage", a.handle("/api/v1/topology/wc/component/lines")[1])
    code, lag = a.handle("/api/v1/topology/wc/lag")
    check("Lag", lag)
    parts = lag["lines"]["spoutLagResult"]["squall.wc.lines"]
    assert parts["0"] == {"consumerCommittedOffset": 100, "logHeadOffset": 105, "lag": 5}
    assert parts["1"] == {"consumerCommittedOffset": -1, "logHeadOffset": 0, "lag": 0}  # nothing committed yet


@pytest.mark.parametrize("path", ["/api/v1/topology/nope", "/api/v1/topology/wc/component/nope", "/api/v1/topology/nope/lag", "/api/v1/nothing"])
def test_unknown_topologies_components_and_paths_are_404_with_storms_error_shape(path: str) -> None:
    code, body = api().handle(path)
    assert code == 404
    check("Error", body)


def test_uptime_is_pretty_as_storm_prints_it() -> None:
    assert [pretty(s) for s in (0, 59, 61, 3600, 90061)] == ["0m 0s", "0m 59s", "1m 1s", "1h 0m 0s", "1d 1h 1m 1s"]


def test_the_topology_page_says_whether_tracing_is_on_and_lists_every_config_key() -> None:
    code, page = api().handle("/api/v1/topology/wc")
    assert code == 200 and page["debug"] is True and page["samplingPct"] == 1.0
    conf = page["configuration"]
    assert set(KEYS) <= set(conf) and conf["topology.name"] == "wc"
    assert conf["topology.workers"] == 2 and conf["topology.debug"] is True and conf["topology.message.timeout.secs"] == 30
    code, component = api().handle("/api/v1/topology/wc/component/split")
    assert code == 200 and component["debug"] is True and component["samplingPct"] == 1.0


def test_a_topologys_shape_holds_its_resolved_config_with_each_keys_source() -> None:
    from pathlib import Path

    from service.control.client import Client, topology_shape
    from service.control.log import ControlTopics
    from service.control.record import TopologyRecord

    source = (Path(__file__).resolve().parents[3] / "examples" / "wordcount.py").read_text()
    rec = TopologyRecord(name="wc", source=source, file_name="wordcount.py", conf={"topology.debug": True})
    client = Client("127.0.0.1:1", {"topology.message.timeout.secs": 60, "squall.trace.sample.rate": 0.05}, {}, ControlTopics())  # no bundle: no broker asked
    shape = topology_shape(client, rec)
    assert shape["debug"] is True and shape["sampling_pct"] == 5.0
    conf, src = shape["configuration"], shape["configuration_sources"]
    assert set(KEYS) <= set(conf) and set(KEYS) <= set(src)
    assert (conf["topology.message.timeout.secs"], src["topology.message.timeout.secs"]) == (60, "service")
    assert (conf["topology.workers"], src["topology.workers"]) == (4, "topology")  # the file's own conf
    assert (conf["topology.debug"], src["topology.debug"]) == (True, "topology")  # submit -c
    assert src["topology.max.spout.pending"] == "default"
    assert shape["component_configuration"] == {"count": {"topology.tick.tuple.freq.secs": 0.1}}


def test_topology_stats_has_storms_four_windows_in_storms_order_when_the_status_has_them() -> None:
    from service.supervisor.storm_api import topology_page
    from tests.unit.ui.fakes import status as windowed

    st = {**STATUS, "windows": windowed()["windows"]}
    st["windows"]["600"]["components"]["lines"].update(complete_sum_s=3.0, complete_count=60.0)
    page = topology_page(st, 1000.0)
    check("TopologyPage", page)
    assert [s["window"] for s in page["topologyStats"]] == ["600", "10800", "86400", ":all-time"]
    ten = page["topologyStats"][0]
    assert (ten["windowPretty"], ten["acked"], ten["emitted"], ten["completeLatency"]) == ("10m 0s", 60, 60 * len(st["windows"]["600"]["components"]), "50.000")
    assert page["topologyStats"][-1]["acked"] == STATUS["trees_acked"]
