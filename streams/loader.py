"""Load a topology from a Python file (``examples/wordcount.py``).

The file defines ``topology() -> streams.Topology``. Every worker loads the same file,
so the topology (and its task layout) is identical in every process.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from streams.exceptions import TopologyError
from streams.topology import Topology


def load_topology(path: str | Path, name: str | None = None) -> Topology:
    """Import ``path`` and call its ``topology()``; optionally rename it (topic prefix).

    Raises TopologyError naming the file when it is missing or has no ``topology()``.
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
    spec.loader.exec_module(module)
    factory = getattr(module, "topology", None)
    if not callable(factory):
        raise TopologyError(f"[{path}] defines no topology() function")
    topology = factory()
    if not isinstance(topology, Topology):
        raise TopologyError(f"[{path}] topology() returned {type(topology).__name__}, not a Topology")
    if name:
        topology.name = name
    return topology
