"""Package attributes imported on first use (PEP 562), so a package can name its public API without loading it.

A package lists its public names in ``__all__``, imports them under ``if TYPE_CHECKING:`` for
the type checker, and sets ``__getattr__ = lazy_exports(__name__, {name: module})``: ``import
acker`` stays cheap, and ``from acker import AckerExecutor`` loads only the runtime it names.
The facade :mod:`streams` does the same for its Kafka-backed names (faust's ``__init__`` is
the model).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package`` that imports ``names[name]`` and returns its ``name``.

    The value is cached in the package's namespace, so each name is looked up once.

    Args:
        package: the package's ``__name__``.
        names: public name -> the module that defines it.

    Returns:
        The ``__getattr__`` function; it raises AttributeError for a name not in ``names``.

    >>> import types
    >>> pkg = sys.modules.setdefault("lazy_demo", types.ModuleType("lazy_demo"))
    >>> pkg.__getattr__ = lazy_exports("lazy_demo", {"dumps": "json"})
    >>> from lazy_demo import dumps
    >>> dumps([1])
    '[1]'
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
