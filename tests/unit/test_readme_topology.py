"""The README's "A topology" code builds, and is the example it says it is (examples/exclamation.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from examples.exclamation import topology as example

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_topology_builds_the_exclamation_example() -> None:
    text = README.read_text()
    section = text[text.index("## A topology") : text.index("## Storm users")]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    scope: dict[str, Any] = {}
    exec(compile(code.group(1), "README.md", "exec"), scope)
    built, shipped = scope["topology"](), example()
    assert built.name == shipped.name == "exclamation"
    for cid, cdef in shipped.components.items():
        other = built.components[cid]
        assert (type(other.obj).__name__, other.parallelism, other.inputs) == (
            type(cdef.obj).__name__,
            cdef.parallelism,
            cdef.inputs,
        )
