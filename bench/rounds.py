"""``bench all --rounds N``: each contender's throughput run N times over, in a new order each round, and the median run kept.

One run of each contender in a fixed order lets the machine's state at a run's start (what the run
before it left: the broker's page cache, its log flushes, a JVM's garbage) weigh on that contender
every time. On Apache Kafka the run right after the ``limit`` row came out slow whichever contender
it was (bench/README.md, 2026-12-01), and ``bench all`` always put ``squall-acked`` there. With
rounds, round 0 runs the contenders in the order given and every later round in a shuffled one
(seeded, so the same on every machine), and each contender's row is its median run. Pure logic: the
runs themselves are bench/compare.py's.
"""

from __future__ import annotations

import random
from typing import Any


def round_orders(contenders: list[str], rounds: int) -> list[list[str]]:
    """The order of the contenders in each of ``rounds`` rounds (``rounds >= 1``).

    Round 0 is ``contenders`` as given; round r > 0 is a shuffle of it seeded with r, so which
    contender follows which changes from round to round. Raises ValueError for ``rounds < 1``.

    >>> round_orders(["a", "b", "c"], 1)
    [['a', 'b', 'c']]
    >>> [sorted(r) for r in round_orders(["a", "b", "c"], 3)]
    [['a', 'b', 'c'], ['a', 'b', 'c'], ['a', 'b', 'c']]
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    orders = [list(contenders)]
    for r in range(1, rounds):
        order = list(contenders)
        random.Random(r).shuffle(order)
        orders.append(order)
    return orders


def schedule(contenders: list[str], rounds: int, warm: bool = False) -> list[tuple[int | None, list[str]]]:
    """Every round's ``(index, order)``: :func:`round_orders`' rounds, after a warm-up round (index None) if ``warm``.

    The warm-up round runs every contender once, in the order given, and is not measured: on a
    fresh Apache Kafka the broker's JIT still compiles through the first runs after the neutral
    warm-up traffic (:mod:`bench.warmup`), because each contender's requests take paths of their
    own (bench/README.md, "The first run after the warm-up is still slow"). After one run of
    every contender, every measured run finds those paths compiled. Raises ValueError for
    ``rounds < 1``.

    >>> schedule(["a", "b"], 1, warm=True)
    [(None, ['a', 'b']), (0, ['a', 'b'])]
    >>> schedule(["a", "b"], 1)
    [(0, ['a', 'b'])]
    """
    measured: list[tuple[int | None, list[str]]] = list(enumerate(round_orders(contenders, rounds)))
    return [(None, list(contenders)), *measured] if warm else measured


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One contender's row from its rounds' rows (each as ``run_contender`` returned it, with ``records_per_s`` where it ran).

    The row is the run with the median ``records_per_s`` (for an even count, the lower of the two
    middle runs), so its CPU, memory and byte counts are one real run's, not a mix. It also gets
    ``rounds_records_per_s`` (every run's rate, in round order). A run that erred, was incorrect
    or only has a ``note`` wins over the rest: the row says the worst, ``correct`` is False if any
    run was incorrect, and ``duplicates`` is the most any run had. Raises ValueError for no runs.

    >>> median_run([{"records_per_s": 3.0, "correct": True}, {"records_per_s": 1.0, "correct": True}, {"records_per_s": 2.0, "correct": True}])
    {'records_per_s': 2.0, 'correct': True, 'rounds_records_per_s': [3.0, 1.0, 2.0]}
    """
    if not runs:
        raise ValueError("no runs to take the median of")
    for key in ("error", "note"):
        bad = [r for r in runs if key in r]
        if bad:
            return {**bad[0], "rounds_records_per_s": [r.get("records_per_s") for r in runs]}
    rated = sorted(runs, key=lambda r: r.get("records_per_s") or 0.0)
    row = dict(rated[(len(rated) - 1) // 2])
    row["rounds_records_per_s"] = [r.get("records_per_s") for r in runs]
    if any(r.get("correct") is False for r in runs):
        row["correct"] = False
    dups = [r["duplicates"] for r in runs if isinstance(r.get("duplicates"), int)]
    if dups and len(runs) > 1:
        row["duplicates"] = max(dups)
    return row
