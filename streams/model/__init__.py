"""What a topology is made of, with no I/O: tuples, components, collector protocols, context, groupings, batches, the builder and the validated spec.

Storm's ``task/`` API side: users program against these names (re-exported by
:mod:`streams`); the executors that run them live in :mod:`streams.runtime`. This layer
imports only :mod:`streams.wire`, :mod:`streams.state` and the bottom modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.lazy import lazy_exports

if TYPE_CHECKING:
    from streams.model.loader import load_topology
    from streams.model.tuple import tick_tuple

__all__ = ["load_topology", "tick_tuple"]

__getattr__ = lazy_exports(
    __name__,
    {
        "load_topology": "streams.model.loader",
        "tick_tuple": "streams.model.tuple",
    },
)
