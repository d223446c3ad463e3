"""Dead-letter records: the headers that say where a record came from and why it died.

Every dead letter (``squall.T.__dlq``) carries the same headers, whichever runtime wrote
it (a Python executor or a SparkBolt's processor): ``squall.error``, ``squall.component``,
``squall.topic``, ``squall.partition``, ``squall.offset``, ``squall.attempts``
(``schemas/README.md``).

>>> dead_letter_headers("bad JSON", component="split", topic="squall.t.split", partition=2, offset=17, attempts=0)[:2]
[('squall.error', 'bad JSON'), ('squall.component', 'split')]
"""

from __future__ import annotations

from collections.abc import Iterable


def dead_letter_headers(reason: str, *, component: str, topic: str, partition: int, offset: int, attempts: int) -> list[tuple[str, str]]:
    """The headers of a dead-letter record, as ``(name, value)`` strings (Kafka clients encode them as UTF-8).

    ``attempts``: deliveries that failed (0 for a poison record).
    """
    return [
        ("squall.error", reason),
        ("squall.component", component),
        ("squall.topic", topic),
        ("squall.partition", str(partition)),
        ("squall.offset", str(offset)),
        ("squall.attempts", str(attempts)),
    ]


HEADER_PREFIX = "squall."


def read_dead_letter_headers(headers: Iterable[tuple[str, bytes | str]] | None) -> dict[str, str]:
    """What :func:`dead_letter_headers` wrote, without the prefix: ``error``, ``component``, ``topic``, ``partition``, ``offset``, ``attempts`` (strings).

    >>> read_dead_letter_headers([("squall.error", b"bad"), ("squall.offset", b"7"), ("other", b"x")])
    {'error': 'bad', 'offset': '7'}
    """
    return {k.removeprefix(HEADER_PREFIX): v.decode() if isinstance(v, bytes) else v for k, v in headers or [] if k.startswith(HEADER_PREFIX)}
