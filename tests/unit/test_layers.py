"""The import layering of docs/design.md: streams <- acker <- service (each imports only below)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {"streams": {"streams"}, "acker": {"streams", "acker"}, "service": {"streams", "acker", "service"}}


def imported_packages(path: Path) -> set[tuple[str, int]]:
    """Top-level Squall packages imported anywhere in ``path`` (module level or inside functions)."""
    out: set[tuple[str, int]] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in ALLOWED:
                out.add((top, node.lineno))
    return out


def test_every_import_points_down_the_layers() -> None:
    wrong = []
    for package, allowed in ALLOWED.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            for top, line in imported_packages(path):
                if top not in allowed:
                    wrong.append(f"{path.relative_to(ROOT)}:{line} imports {top}")
    assert wrong == []
