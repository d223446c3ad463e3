"""The import contract of docs/design.md ("Layers"), for every subpackage.

Inside ``streams``, bottom to top, each layer imports only itself and the layers below it::

    base (streams.exceptions, streams.config) -> wire -> state -> windowing -> model -> kafka -> monitoring -> runtime

``transactional`` sits on ``kafka`` and ``model`` (never ``monitoring`` or ``runtime``, and
``runtime`` never imports it). Above them all: ``spark`` -> ``acker`` -> ``service``. The test
kit ``streams.testing`` sits beside ``service``, on ``acker`` (it runs the acker's ledger); only
tests import it. The
facade ``streams/__init__.py`` re-exports state, windowing, model, kafka and transactional names; nothing
inside the packages imports it.

Every import counts, wherever it is: at module level, under ``if TYPE_CHECKING:`` and
inside functions. On top of the contract, the tests fail on an import cycle between
subpackages, on any cycle between modules (type-only imports included), and on a Kafka
client loaded by ``import streams``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("streams", "acker", "service")

STREAMS_ORDER = ("base", "wire", "state", "windowing", "model", "kafka", "monitoring", "runtime")
"""The streams layers, bottom first: each may import the ones before it."""


def _contract() -> dict[str, frozenset[str]]:
    allowed: dict[str, frozenset[str]] = {}
    for i, layer in enumerate(STREAMS_ORDER):
        allowed[layer] = frozenset(STREAMS_ORDER[: i + 1])
    allowed["transactional"] = frozenset({"base", "wire", "state", "windowing", "model", "kafka", "transactional"})
    allowed["spark"] = frozenset(STREAMS_ORDER) | {"transactional", "spark"}
    allowed["facade"] = frozenset({"base", "state", "windowing", "model", "kafka", "transactional", "facade"})
    allowed["acker"] = allowed["spark"] | {"acker", "facade"}
    allowed["service"] = allowed["acker"] | {"service"}
    allowed["testing"] = allowed["acker"] | {"testing"}
    return allowed


CONTRACT = _contract()
"""unit -> the units it may import."""


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``line``; ``when`` is ``module`` (at import time),
    ``type`` (under ``TYPE_CHECKING``) or ``call`` (inside a function)."""

    source: str
    target: str
    line: int
    when: str


def module_name(path: Path) -> str:
    """``streams/model/spec.py`` -> ``streams.model.spec``; a package's ``__init__`` -> the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def unit_of(module: str) -> str | None:
    """The layer a module belongs to (None: outside the three packages)."""
    parts = module.split(".")
    if parts[0] in ("acker", "service"):
        return parts[0]
    if parts[0] != "streams":
        return None
    if len(parts) == 1:
        return "facade"
    if parts[1] in ("exceptions", "config"):
        return "base"
    return parts[1]


def all_modules() -> dict[str, Path]:
    """Every module of the three packages, by dotted name."""
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is one of ``modules`` (``from a.b import c`` may name a module or a value)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def edges_of(module: str, source: str, modules: dict[str, Path]) -> list[Edge]:
    """Every import of a Squall module in ``source``, with where it runs."""
    out: list[Edge] = []

    def visit(node: ast.AST, when: str) -> None:
        for child in ast.iter_child_nodes(node):
            child_when = when
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                child_when = "call"
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    visit_stmt(stmt, "type" if when == "module" else when)
                for stmt in child.orelse:
                    visit_stmt(stmt, when)
                continue
            visit_stmt(child, child_when)

    def visit_stmt(node: ast.AST, when: str) -> None:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            target = _resolve(name, modules)
            if target is not None and target != module:
                out.append(Edge(module, target, getattr(node, "lineno", 0), when))
        visit(node, when)

    visit(ast.parse(source), "module")
    return out


def all_edges(extra: dict[str, str] | None = None) -> list[Edge]:
    """The import edges of the repository (``extra``: module -> source text to use instead)."""
    modules = all_modules()
    out: list[Edge] = []
    for name, path in modules.items():
        text = (extra or {}).get(name, path.read_text())
        out += edges_of(name, text, modules)
    return out


def violations(edges: list[Edge]) -> list[str]:
    """Imports the contract forbids, as ``source:line imports target (unit -> unit)``."""
    wrong = []
    for e in edges:
        src, dst = unit_of(e.source), unit_of(e.target)
        if src is None or dst is None:
            continue
        if dst not in CONTRACT[src]:
            wrong.append(f"{e.source}:{e.line} imports {e.target} ({src} -> {dst}, {e.when})")
    return sorted(wrong)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node, or a self loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def strongconnect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return found


def unit_graph(edges: list[Edge]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for e in edges:
        src, dst = unit_of(e.source), unit_of(e.target)
        if src and dst and src != dst:
            graph.setdefault(src, set()).add(dst)
    return graph


def module_graph(edges: list[Edge], when: tuple[str, ...]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for e in edges:
        if e.when in when:
            graph.setdefault(e.source, set()).add(e.target)
    return graph


# -- the repository ---------------------------------------------------------------------


def test_every_import_follows_the_layer_contract() -> None:
    assert violations(all_edges()) == []


def test_no_import_cycle_between_subpackages() -> None:
    assert cycles(unit_graph(all_edges())) == []


def test_no_import_cycle_between_modules_type_only_imports_included() -> None:
    assert cycles(module_graph(all_edges(), ("module", "type"))) == []


def test_no_import_cycle_at_import_time_or_through_deferred_imports() -> None:
    assert cycles(module_graph(all_edges(), ("module", "call"))) == []


def test_every_module_belongs_to_a_known_layer() -> None:
    units = {unit_of(m) for m in all_modules()}
    assert units <= set(CONTRACT), units - set(CONTRACT)


def test_import_streams_loads_no_kafka_client() -> None:
    code = "import streams, sys; assert 'confluent_kafka' not in sys.modules, 'import streams loaded confluent_kafka'; print(len(streams.__all__))"
    got = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    lazy = "import streams, sys; streams.TransactionalKafkaSpout; assert 'confluent_kafka' in sys.modules"
    assert subprocess.run([sys.executable, "-c", lazy], cwd=ROOT, capture_output=True, timeout=120).returncode == 0


def test_the_facade_names_every_public_name_once() -> None:
    import streams

    for name in streams.__all__:
        assert getattr(streams, name) is not None, name
    assert len(streams.__all__) == len(set(streams.__all__))


# -- the checker catches what it should -----------------------------------------------


def _with_line(module: str, line: str) -> list[Edge]:
    path = all_modules()[module]
    return all_edges({module: path.read_text() + "\n" + line + "\n"})


def test_a_forbidden_import_is_reported() -> None:
    wrong = violations(_with_line("streams.model.spec", "from streams.runtime.executor import Executor"))
    line = len(all_modules()["streams.model.spec"].read_text().splitlines()) + 2
    assert wrong == [f"streams.model.spec:{line} imports streams.runtime.executor (model -> runtime, module)"]


def test_runtime_and_transactional_may_not_import_each_other() -> None:
    assert violations(_with_line("streams.runtime.spout", "from streams.transactional.coordinator import BatchCoordinator"))
    assert violations(_with_line("streams.transactional.spout", "if TYPE_CHECKING:\n    from streams.runtime.collectors import BatchTreeImpl"))


def test_a_deferred_import_and_an_import_of_the_facade_count_too() -> None:
    deferred = "def f():\n    from service.cli.main import main"
    assert violations(_with_line("acker.ledger", deferred)) == [
        f"acker.ledger:{len(all_modules()['acker.ledger'].read_text().splitlines()) + 3} imports service.cli.main (acker -> service, call)"
    ]
    assert violations(_with_line("streams.kafka.spout", "import streams"))


def test_a_cycle_between_modules_is_reported() -> None:
    edges = _with_line("streams.wire.naming", "if TYPE_CHECKING:\n    from streams.wire.codec import encode_json")
    edges += _with_line("streams.wire.codec", "from streams.wire.naming import TP")
    assert ["streams.wire.codec", "streams.wire.naming"] in cycles(module_graph(edges, ("module", "type")))


def test_cycles_finds_components_and_self_loops() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"a"}}) == [["a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
