"""Config is read once: every component reads the typed TopologyConfig, never raw keys with literal defaults."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from streams import KafkaSpout, TopologyBuilder, TopologyContext
from streams.config import TRANSACTIONAL_MAX_PENDING, TopologyConfig, resolve
from streams.exceptions import ConfigError
from tests.unit.kafka.test_record_trees import Recorder

ROOT = Path(__file__).resolve().parents[2]


def raw_key_reads(source: str, name: str) -> list[str]:
    """``x.get("squall.…")`` / ``x["topology.…"]`` reads of a config key in ``source`` (file ``name``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
            arg = node.args[0]
            key = arg.value if isinstance(arg, ast.Constant) else None
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        if isinstance(key, str) and key.startswith(("squall.", "topology.", "spark.")):
            out.append(f"{name}:{getattr(node, 'lineno', 0)} reads {key!r}")
    return out


def test_no_module_reads_a_raw_config_key() -> None:
    files = [p for pkg in ("streams", "acker", "service") for p in sorted((ROOT / pkg).rglob("*.py")) if p.name != "config.py"]
    assert [r for p in files for r in raw_key_reads(p.read_text(), str(p.relative_to(ROOT)))] == []


def test_the_checker_sees_a_raw_read() -> None:
    source = 'def f(conf):\n    conf["topology.workers"] = 3\n    return conf.get("squall.spout.max.retries", 5), conf["topology.workers"]\n'
    assert raw_key_reads(source, "m.py") == ["m.py:3 reads 'squall.spout.max.retries'", "m.py:3 reads 'topology.workers'"]


def test_a_kafka_spout_takes_its_retry_and_tree_settings_from_the_typed_config() -> None:
    config = resolve(
        {
            "squall.spout.retry.initial.delay.secs": 0.5,
            "squall.spout.retry.multiplier": 3,
            "squall.spout.retry.max.delay.secs": 4,
            "squall.spout.max.retries": 2,
            "squall.spout.tree.records": 7,
        }
    )
    spout = KafkaSpout()
    builder = TopologyBuilder()
    builder.set_spout("lines", spout)
    spout.open(config.as_dict(), TopologyContext(builder.create_topology("cfg"), "lines", 0, config=config), Recorder())  # type: ignore[arg-type]
    policy = spout._retry.policy
    assert (policy.initial_delay_s, policy.multiplier, policy.max_delay_s, policy.max_retries) == (0.5, 3.0, 4.0, 2)
    assert spout.tree_records == 7


def test_a_context_without_a_config_has_the_defaults() -> None:
    builder = TopologyBuilder()
    builder.set_spout("lines", KafkaSpout())
    ctx = TopologyContext(builder.create_topology("cfg"), "lines", 0)
    assert ctx.config == TopologyConfig()
    assert ctx.conf["squall.spout.max.retries"] == TopologyConfig().max_retries


def test_spouts_and_bolts_commit_on_their_own_periods() -> None:
    conf = resolve({"squall.bolt.commit.period.secs": 0.2})
    assert (conf.commit_period_secs, conf.bolt_commit_period_secs) == (1.0, 0.2)
    with pytest.raises(ConfigError, match=r"\[count\] invalid config: squall.bolt.commit.period.secs"):
        resolve({"squall.bolt.commit.period.secs": 0}, where="count")


def test_a_transactional_spout_s_batches_in_flight() -> None:
    assert resolve({}).batches_in_flight == TRANSACTIONAL_MAX_PENDING
    assert resolve({"topology.max.spout.pending": 2}).batches_in_flight == 2
