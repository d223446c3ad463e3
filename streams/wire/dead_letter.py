"""Dead-letter records: the headers that say where a record came from and why it died.

Every dead letter (``squall.T.__dlq``) carries the same headers, whichever runtime wrote
it (a Python executor or a SparkBolt's processor): ``squall.error``, ``squall.component``,
``squall.topic``, ``squall.partition``, ``squall.offset``, ``squall.attempts`` and
``squall.cause`` (``poison``: it could not be read or written, ``fail`` or ``timeout``: its
tree's last failure before the retries ran out). A KafkaSpout's dead letter also says which
task gave up (``squall.task``), when the record first and last failed (``squall.first.failure``,
``squall.last.failure``, wall-clock seconds), what its last failure said (``squall.why``: the
fail op's words, e.g. ``[check] ZeroDivisionError: division by zero``, ``[check] fail: reason``
or ``[lines] no ack within the message timeout of 30 s``) and the root ids of its failed trees
(``squall.root``, ``squall.roots``), which ``squall dlq NAME show`` joins with the error
reports for the traceback (``schemas/README.md``).

>>> dead_letter_headers("bad JSON", component="split", topic="squall.t.split", partition=2, offset=17, attempts=0)[:2]
[('squall.error', 'bad JSON'), ('squall.component', 'split')]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

HEADER_PREFIX = "squall."


DEAD_LETTER_CAUSES = ("poison", "fail", "timeout")
"""Why a record was dead-lettered (the ``squall.cause`` header)."""


def dead_letter_headers(
    reason: str, *, component: str, topic: str, partition: int, offset: int, attempts: int, details: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """The headers of a dead-letter record, as ``(name, value)`` strings (Kafka clients encode them as UTF-8).

    ``attempts``: deliveries that failed (0 for a poison record). ``details``: more headers
    by name without the prefix (``cause``, ``task``, ``first.failure``, ``last.failure``,
    ``why``, ``root``, ``roots``); ``cause`` defaults to ``poison`` with no attempts, else ``fail``.
    """
    extra = dict(details or {})
    extra.setdefault("cause", "poison" if attempts == 0 else "fail")
    return [
        ("squall.error", reason),
        ("squall.component", component),
        ("squall.topic", topic),
        ("squall.partition", str(partition)),
        ("squall.offset", str(offset)),
        ("squall.attempts", str(attempts)),
        *((HEADER_PREFIX + k, v) for k, v in extra.items()),
    ]


def read_dead_letter_headers(headers: Iterable[tuple[str, bytes | str]] | None) -> dict[str, str]:
    """What :func:`dead_letter_headers` wrote, without the prefix: ``error``, ``component``, ``topic``, ``partition``, ``offset``, ``attempts`` (strings).

    >>> read_dead_letter_headers([("squall.error", b"bad"), ("squall.offset", b"7"), ("other", b"x")])
    {'error': 'bad', 'offset': '7'}
    """
    return {k.removeprefix(HEADER_PREFIX): v.decode() if isinstance(v, bytes) else v for k, v in headers or [] if k.startswith(HEADER_PREFIX)}
