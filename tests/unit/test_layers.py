"""The import contract of docs/design.md ("Layers"), over the whole repository.

The units: the ``streams`` layers (``base`` = ``streams.exceptions``, ``streams.config`` and ``streams.lazy``,
``wire``, ``state``, ``windowing``, ``model``, ``kafka``, ``monitoring``, ``runtime``,
``transactional``, ``spark``, the test kit ``testing`` and the ``facade``
``streams/__init__.py``), ``acker``, and one unit per room of ``service/``
(``service.exceptions``, ``service.config``, ``service.process``, ``service.brokers``,
``service.control``, ``service.worker``, ``service.query``, ``service.ui``, ``service.supervisor``,
``service.run``, ``service.cli``).

:data:`CONTRACT` is a graph, not a total order: each unit names the units it may import,
and every allowed edge must be used (an edge nobody uses is not allowed by accident). Every
import counts, wherever it is: at module level, under ``if TYPE_CHECKING:`` and inside
functions, and relative imports are resolved (and forbidden outright, by ruff's ``TID252``
and here). On top of the contract, the tests fail on an import cycle between units, on any
cycle between modules (type-only imports included), and on a Kafka client loaded by
``import streams``. ``bench/`` and ``examples/`` import only public names: a name in the
``__all__`` of a package (or of a base module), never a module inside a package.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("streams", "acker", "service")
USERS = ("bench", "examples")
"""Code outside the packages that must stay on their public names."""

CONTRACT: dict[str, frozenset[str]] = {
    u: frozenset(v)
    for u, v in {
        "base": set(),
        "wire": {"base"},
        "state": {"base", "wire"},
        "windowing": {"base"},
        "model": {"base", "state", "windowing", "wire"},
        "kafka": {"base", "model", "state", "wire"},
        "monitoring": {"base", "kafka", "model", "wire"},
        "runtime": {"base", "kafka", "model", "monitoring", "state", "wire"},
        "transactional": {"base", "kafka", "model", "wire"},
        "spark": {"base", "kafka", "model", "monitoring", "runtime", "state", "wire"},
        "api": {"base", "model", "state", "windowing"},
        "trident": {"api", "base", "model"},
        "facade": {"api", "base", "kafka", "model", "state", "transactional", "windowing"},
        "acker": {"base", "kafka", "monitoring", "runtime", "wire"},
        "testing": {"acker", "api", "base", "kafka", "model", "monitoring", "runtime", "state", "transactional", "wire"},
        "service": set(),
        "service.exceptions": {"base"},
        "service.process": {"runtime"},
        "service.config": {"base", "kafka", "service.process"},
        "service.brokers": {"base", "kafka", "model", "wire", "service.exceptions", "service.process"},
        "service.deps": {"kafka", "service.brokers", "service.exceptions"},
        "service.control": {
            "base",
            "kafka",
            "model",
            "monitoring",
            "runtime",
            "spark",
            "transactional",
            "wire",
            "service.brokers",
            "service.deps",
            "service.exceptions",
        },
        "service.worker": {"base", "kafka", "model", "monitoring", "runtime", "wire", "service.control", "service.process"},
        "service.query": {"base", "kafka", "monitoring", "wire", "service.brokers", "service.control", "service.exceptions"},
        "service.ui": {"base", "monitoring", "service.control", "service.exceptions", "service.query"},
        "service.supervisor": {
            "base",
            "kafka",
            "model",
            "wire",
            "service.brokers",
            "service.config",
            "service.control",
            "service.deps",
            "service.exceptions",
            "service.process",
            "service.query",
            "service.ui",
            "service.worker",
        },
        "service.run": {
            "base",
            "kafka",
            "model",
            "monitoring",
            "state",
            "transactional",
            "wire",
            "service.brokers",
            "service.config",
            "service.control",
            "service.exceptions",
            "service.process",
            "service.query",
        },
        "service.cli": {
            "base",
            "monitoring",
            "service.brokers",
            "service.config",
            "service.control",
            "service.exceptions",
            "service.query",
            "service.run",
            "service.supervisor",
        },
    }.items()
}
"""unit -> the other units it may import (the edges of the layer graph, docs/design.md "Layers")."""


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
    """The unit a module belongs to (None: outside the three packages)."""
    parts = module.split(".")
    if parts[0] == "acker":
        return "acker"
    if parts[0] == "service":
        return "service" if len(parts) == 1 else f"service.{parts[1]}"
    if parts[0] != "streams":
        return None
    if len(parts) == 1:
        return "facade"
    if parts[1] in ("exceptions", "config", "lazy"):
        return "base"
    return parts[1]


def all_modules(roots: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Every module under ``roots``, by dotted name."""
    return {module_name(p): p for pkg in roots for p in sorted((ROOT / pkg).rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is one of ``modules`` (``from a.b import c`` may name a module or a value)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from`` import names: ``from ..runtime import x`` in ``streams.model.spec`` -> ``streams.runtime``."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
    return ".".join([*base, *([node.module] if node.module else [])])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def edges_of(module: str, source: str, modules: dict[str, Path], is_package: bool = False) -> list[Edge]:
    """Every import of a Squall module in ``source``, with where it runs; relative imports are resolved."""
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
        elif isinstance(node, ast.ImportFrom):
            base = absolute(module, is_package, node)
            names = [f"{base}.{a.name}" for a in node.names]
        for name in names:
            target = _resolve(name, modules)
            if target is not None and target != module:
                out.append(Edge(module, target, getattr(node, "lineno", 0), when))
        visit(node, when)

    visit(ast.parse(source), "module")
    return out


def relative_imports(roots: tuple[str, ...] = (*PACKAGES, *USERS, "tests")) -> list[str]:
    """Every relative import under ``roots``, as ``path:line``."""
    found = []
    for pkg in roots:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.level > 0:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def all_edges(extra: dict[str, str] | None = None) -> list[Edge]:
    """The import edges of the repository (``extra``: module -> source text to use instead)."""
    modules = all_modules()
    out: list[Edge] = []
    for name, path in modules.items():
        text = (extra or {}).get(name, path.read_text())
        out += edges_of(name, text, modules, path.name == "__init__.py")
    return out


def violations(edges: list[Edge]) -> list[str]:
    """Imports the contract forbids, as ``source:line imports target (unit -> unit)``."""
    wrong = []
    for e in edges:
        src, dst = unit_of(e.source), unit_of(e.target)
        if src is None or dst is None:
            continue
        if dst != src and dst not in CONTRACT[src]:
            wrong.append(f"{e.source}:{e.line} imports {e.target} ({src} -> {dst}, {e.when})")
    return sorted(wrong)


BASE_MODULES = ("streams.config", "streams.exceptions", "service.config", "service.exceptions")
"""Modules outside any subpackage that ``bench/`` and ``examples/`` may import from, like a package."""


def exported(path: Path) -> set[str] | None:
    """The names of a module's ``__all__`` (a list or tuple of strings), None if it has none."""
    for node in ast.parse(path.read_text()).body:
        value: ast.expr | None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "__all__" and isinstance(value, ast.List | ast.Tuple):
            return {e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return None


def private_uses(source: str, where: str, modules: dict[str, Path]) -> list[str]:
    """Imports in ``source`` (a file of ``bench/`` or ``examples/``) of anything but a public name, as ``where:line ...``.

    A public name is one in the ``__all__`` of a package or of a :data:`BASE_MODULES` module.
    """
    wrong = []
    for node in ast.walk(ast.parse(source)):
        pairs: list[tuple[str, str | None]]
        if isinstance(node, ast.Import):
            pairs = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            pairs = [(node.module, a.name) for a in node.names]
        else:
            continue
        for mod, name in pairs:
            if mod.split(".")[0] not in PACKAGES:
                continue
            path = modules.get(mod)
            public = path is not None and (path.name == "__init__.py" or mod in BASE_MODULES)
            names = exported(path) if path is not None and public else None
            if not public:
                wrong.append(f"{where}:{node.lineno} imports {mod}, a module inside a package")
            elif name is not None and (names is None or name not in names):
                wrong.append(f"{where}:{node.lineno} imports {mod}.{name}, not in {mod}.__all__")
    return wrong


def all_private_uses() -> list[str]:
    modules = all_modules()
    out = []
    for name, path in all_modules(USERS).items():
        out += private_uses(path.read_text(), name, modules)
    return sorted(out)


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


def test_every_allowed_edge_is_used() -> None:
    used = unit_graph(all_edges())
    unused = sorted(f"{src} -> {dst}" for src, allowed in CONTRACT.items() for dst in allowed if dst not in used.get(src, set()))
    assert unused == [], "allowed but unused: drop them from CONTRACT"


def test_no_relative_imports() -> None:
    assert relative_imports() == []


def test_bench_and_examples_import_only_public_names() -> None:
    assert all_private_uses() == []


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
        f"acker.ledger:{len(all_modules()['acker.ledger'].read_text().splitlines()) + 3} imports service.cli.main (acker -> service.cli, call)"
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


def test_an_injected_relative_import_is_resolved_and_reported() -> None:
    wrong = violations(_with_line("streams.model.spec", "from ..runtime.executor import Executor"))
    line = len(all_modules()["streams.model.spec"].read_text().splitlines()) + 2
    assert wrong == [f"streams.model.spec:{line} imports streams.runtime.executor (model -> runtime, module)"]
    assert violations(_with_line("streams.model.spec", "from . import tuple")) == []  # same unit
    pkg = ast.parse("from .. import exceptions").body[0]
    assert isinstance(pkg, ast.ImportFrom)
    assert absolute("service.query", True, pkg) == "service"
    assert absolute("service.query.dlq", False, pkg) == "service"


def test_a_service_room_may_not_import_one_above_it() -> None:
    wrong = violations(_with_line("service.query.dlq", "from service.supervisor.http import HealthServer"))
    assert len(wrong) == 1 and "(service.query -> service.supervisor, module)" in wrong[0]
    assert violations(_with_line("service.worker.drain", "if TYPE_CHECKING:\n    from service.run.runner import Job"))


def test_an_unused_edge_is_not_allowed() -> None:
    graph = unit_graph(all_edges())
    assert all(graph.get(src, set()) == allowed for src, allowed in CONTRACT.items() if allowed), "CONTRACT equals the graph"


def test_private_imports_from_bench_are_reported() -> None:
    modules = all_modules()
    got = private_uses("from streams.runtime.executor import Executor\nfrom streams import Bolt, _LAZY\nimport service.run.runner", "bench.x", modules)
    assert got == [
        "bench.x:1 imports streams.runtime.executor, a module inside a package",
        "bench.x:2 imports streams._LAZY, not in streams.__all__",
        "bench.x:3 imports service.run.runner, a module inside a package",
    ]
    assert private_uses("from streams import Bolt\nimport streams.testing", "examples.y", modules) == []
