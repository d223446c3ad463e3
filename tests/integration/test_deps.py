"""Dependencies shipped with a topology (issue 51): ``squall submit --package DIR`` and ``--requirements FILE``
on Apache Kafka, as a user runs them. The supervisor has neither the package's modules nor the
PyPI package installed; it installs the bundle the submit stored in Kafka into a virtualenv of
its own, offline (``PIP_NO_INDEX=1``), and the workers run in it. A requirement that conflicts
with Squall's own packages is refused at submit with pip's words."""

from __future__ import annotations

import importlib.util
import json
import time
import uuid
from pathlib import Path

import pytest

from service.brokers.admin import read_topic
from tests.integration.service_harness import Cluster

pytestmark = pytest.mark.broker

SMALL_PYPI_PACKAGE = "inflection"
"""A 9 KB pure-Python wheel on PyPI that Squall does not depend on."""

TOPOLOGY = """
from typing import Any

from streams import BasicBolt, FieldNameBasedTupleToKafkaMapper, KafkaBolt, KafkaSpout, RecordTranslator, TopologyBuilder

{imports}


class Shape(BasicBolt):
    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "word"])

    def execute(self, tuple: Any, collector: Any) -> None:  # noqa: A002
        word = str(tuple[0])
        collector.emit([word, {call}])


def topology():
    b = TopologyBuilder()
    b.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), 1)
    b.set_bolt("shape", Shape(), 1).shuffle_grouping("lines")
    sink = KafkaBolt("squall.{{topology}}.shaped", FieldNameBasedTupleToKafkaMapper(key_field="key", message_field="word"), value_serializer="str")
    b.set_bolt("sink", sink, 1).shuffle_grouping("shape")
    return b.create_topology("deps", {{"topology.workers": 1}})
"""


def shaped(cluster: Cluster, name: str, words: list[str], timeout_s: float = 120.0) -> dict[str, str]:
    """Feed ``words`` to ``name``'s spout and read its output until every word came out."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": cluster.bootstrap})
    for w in words:
        p.produce(f"squall.{name}.lines", w.encode())
    assert p.flush(30) == 0
    deadline = time.monotonic() + timeout_s
    out: dict[str, str] = {}
    while len(out) < len(words):
        assert time.monotonic() < deadline, f"[{name}] {len(out)} of {len(words)} words out after {timeout_s} s: {cluster.squall('status', name).stdout}"
        time.sleep(1)
        out = {r["key"]: r["value"] for r in read_topic_kv(cluster.bootstrap, f"squall.{name}.shaped")}
    return out


def read_topic_kv(bootstrap: str, topic: str) -> list[dict[str, str]]:
    from service.brokers.admin import read_records

    try:
        return [{"key": k.decode(), "value": v.decode()} for k, v in read_records(bootstrap, topic, timeout_s=20) if k is not None and v is not None]
    except Exception:  # the topic before its first record
        return []


def test_a_package_and_a_pypi_requirement_ship_with_their_topologies_and_run_where_neither_is_installed(cluster: Cluster, tmp_path: Path) -> None:
    assert importlib.util.find_spec(SMALL_PYPI_PACKAGE) is None, f"{SMALL_PYPI_PACKAGE} must not be installed where the supervisor runs"
    pkg = tmp_path / f"shapes{uuid.uuid4().hex[:6]}"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("def shout(word: str) -> str:\n    return word.upper() + '!'\n")
    (pkg / "topology.py").write_text(TOPOLOGY.format(imports="from helpers import shout", call="shout(word)"))
    assert importlib.util.find_spec("helpers") is None
    reqs = tmp_path / "requirements.txt"
    reqs.write_text(f"{SMALL_PYPI_PACKAGE}==0.5.1\n")
    plural = tmp_path / "plural.py"
    plural.write_text(TOPOLOGY.format(imports="import inflection", call="inflection.pluralize(word)"))
    cluster.serve("s1")
    a, b = f"pkg{uuid.uuid4().hex[:6]}", f"req{uuid.uuid4().hex[:6]}"
    out = cluster.squall("submit", str(pkg / "topology.py"), "--name", a, "--package", str(pkg)).stdout
    assert out.startswith(f"submitted {a}: 1 workers") and "dependencies" in out and "0 wheels" in out
    out = cluster.squall("submit", str(plural), "--name", b, "--requirements", str(reqs)).stdout
    assert out.startswith(f"submitted {b}: 1 workers") and "1 wheels" in out
    assert shaped(cluster, a, ["to", "be"]) == {"to": "TO!", "be": "BE!"}
    assert shaped(cluster, b, ["word", "mouse"]) == {"word": "words", "mouse": "mice"}
    # Installed once per bundle, under the supervisor's data dir; the record names the bundle.
    envs_dir = cluster.tmp / "data" / "supervisors" / "s1" / "envs"
    assert len(list(envs_dir.glob("*/.ready"))) == 2, list(envs_dir.iterdir())
    record = next(r for r in read_topic(cluster.bootstrap, f"{cluster.namespace}.__control") if r.get("name") == b)
    assert record["artifact"]["requirements"] == [f"{SMALL_PYPI_PACKAGE}==0.5.1"] and record["artifact"]["wheels"][0]["file"].startswith(SMALL_PYPI_PACKAGE)
    # Killed: its env goes once no worker uses it.
    cluster.squall("kill", a, "-w", "0")
    deadline = time.monotonic() + 60
    while len(list(envs_dir.glob("*/.ready"))) != 1:
        assert time.monotonic() < deadline, "the killed topology's env was not removed"
        time.sleep(1)


def test_a_requirement_that_conflicts_with_squalls_own_packages_is_refused_at_submit(cluster: Cluster, tmp_path: Path) -> None:
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("orjson==3.0.0\n")  # Squall runs another orjson
    topo = tmp_path / "plain.py"
    topo.write_text(TOPOLOGY.format(imports="", call="word"))
    got = cluster.squall("submit", str(topo), "--requirements", str(reqs), check=False)
    assert got.returncode == 2 and "Traceback" not in got.stderr, got.stderr
    assert got.stderr.startswith(f"error: [{reqs}] pip could not resolve these requirements with Squall's own packages pinned"), got.stderr
    assert "Cannot install orjson==3.0.0" in got.stderr and "The user requested (constraint) orjson==" in got.stderr, got.stderr
    assert json.loads(cluster.squall("list", "--json").stdout or "[]") == []
