"""Root and edge ids: random, non-zero, 64-bit (Storm's ``MessageId.generateId``).

Ids come from a private generator seeded from the OS, never from the global ``random``:
a user who seeds ``random`` (say in ``prepare()``) would otherwise make tasks draw the
same ids, and equal edge ids cancel in the acker's XOR.

>>> from streams.wire.ids import new_id
>>> a, b = new_id(), new_id()
>>> 0 < a < 2**64 and 0 < b < 2**64 and a != b
True
"""

from __future__ import annotations

import os
import random

_ids = random.Random(int.from_bytes(os.urandom(32), "big"))
_bits = _ids.getrandbits


def new_id() -> int:
    """A random id in ``1 .. 2**64 - 1`` (0 is reserved: an empty table slot, "no root")."""
    return _bits(64) or 1
