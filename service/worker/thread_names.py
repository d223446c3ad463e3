"""An executor thread's name at the OS level, so ``top -H``, ``ps -L`` and ``/proc/<pid>/task/*/comm`` show ``count-1``, not ``python``.

Python 3.11 names threads for itself only (``threading.Thread(name=...)``); Linux keeps a
15-byte name per thread (``prctl(PR_SET_NAME)``), which every OS tool reads. An operator looking
at a worker that burns a core can then tell which executor it is, and the bench can split a
worker's CPU by executor.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable

PR_SET_NAME = 15
"""Linux prctl option: set the calling thread's name (at most 15 bytes and a NUL)."""

_libc: ctypes.CDLL | None = None
if sys.platform.startswith("linux"):
    try:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:  # no libc to load (a static Python): threads keep the name "python"
        _libc = None


def set_os_thread_name(name: str) -> bool:
    """Name the calling thread ``name`` (cut to 15 bytes of UTF-8) for the OS; False where the OS has no such name (not Linux)."""
    if _libc is None:
        return False
    raw = name.encode("utf-8", "replace")[:15]
    return int(_libc.prctl(PR_SET_NAME, ctypes.c_char_p(raw), 0, 0, 0)) == 0


def os_named(target: Callable[[], None], name: str) -> Callable[[], None]:
    """``target`` wrapped to name its thread ``name`` for the OS first: ``Thread(target=os_named(e.run, "count-1"))``."""

    def run() -> None:
        set_os_thread_name(name)
        target()

    return run
