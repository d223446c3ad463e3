"""One spelling per concept: the acker's component name and the topic-partition alias live only in streams.wire.naming."""

from __future__ import annotations

import ast
from pathlib import Path

from streams.wire.naming import ACKER_COMPONENT, acker_changelog_topic, acker_topic, component_topic

ROOT = Path(__file__).resolve().parents[3]


def literals(path: Path) -> list[tuple[int, str]]:
    """String constants in ``path`` that are not docstrings (code, not prose)."""
    tree = ast.parse(path.read_text())
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [(getattr(n, "lineno", 0), n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_the_acker_component_is_spelled_only_in_wire_naming() -> None:
    naming = ROOT / "streams" / "wire" / "naming.py"
    found = [
        f"{p.relative_to(ROOT)}:{line} {value!r}"
        for pkg in ("streams", "acker", "service")
        for p in sorted((ROOT / pkg).rglob("*.py"))
        if p != naming
        for line, value in literals(p)
        if ACKER_COMPONENT in value and " " not in value  # a name in code, not prose (descriptions, messages)
    ]
    assert found == []


def test_the_topic_partition_alias_is_defined_once() -> None:
    # service.control.claims.TaskRef is also tuple[str, int], but a (component, task) pair: another concept.
    defs = [
        f"{p.relative_to(ROOT)}:{n.lineno}"
        for pkg in ("streams", "acker", "service")
        for p in sorted((ROOT / pkg).rglob("*.py"))
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, ast.Assign) and ast.unparse(n.value) == "tuple[str, int]" and ast.unparse(n.targets[0]) in ("TP", "TopicPartition", "TopicPart")
    ]
    assert [d.rsplit(":", 1)[0] for d in defs] == ["streams/wire/naming.py"]


def test_names() -> None:
    assert acker_topic("wc") == f"squall.wc.{ACKER_COMPONENT}" == component_topic("wc", ACKER_COMPONENT)
    assert acker_changelog_topic("wc") == "squall.wc.__acker.changelog"
