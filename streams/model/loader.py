"""Load a topology from a Python file (``examples/wordcount.py``).

The file defines ``topology() -> streams.Topology``. Every worker loads the same file,
so the topology (and its task layout) is identical in every process.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from streams.exceptions import TopologyError
from streams.model.spec import Topology


def load_topology(path: str | Path, name: str | None = None) -> Topology:
    """Import ``path`` and call its ``topology()``; optionally rename it (topic prefix).

    Raises TopologyError naming the file (and the line, for user code that fails) when it
    is missing, does not import, has no ``topology()``, or ``topology()`` raises.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise TopologyError(f"[{path}] topology file not found")
    mod_name = f"squall_user_{path.stem}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise TopologyError(f"[{path}] cannot import topology file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise TopologyError(f"[{path}:{exc.lineno}] syntax error: {exc.msg}") from exc
    except Exception as exc:
        raise TopologyError(f"[{path}:{_user_line(exc, path)}] importing the topology file raised {type(exc).__name__}: {exc}") from exc
    factory = getattr(module, "topology", None)
    if not callable(factory):
        raise TopologyError(f"[{path}] defines no topology() function")
    try:
        topology = factory()
    except TopologyError:
        raise
    except Exception as exc:
        raise TopologyError(f"[{path}:{_user_line(exc, path)}] topology() raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(topology, Topology):
        raise TopologyError(f"[{path}] topology() returned {type(topology).__name__}, not a Topology")
    if name:
        topology.name = name
    return topology


def _user_line(exc: BaseException, path: Path) -> int | str:
    """The deepest line of ``path`` in ``exc``'s traceback ("?" if none)."""
    line: int | str = "?"
    tb = exc.__traceback__
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve() == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
