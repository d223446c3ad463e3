"""Storm 2.x's Stream API (``org.apache.storm.streams``), compiled onto Squall's spouts and bolts.

>>> from streams.api import StreamBuilder, TumblingWindows, Count
>>> b = StreamBuilder()

See :mod:`streams.api.stream` for the operations and :mod:`streams.api.compiler` for how they
become bolts (fusion, grouping placement, anchoring); docs/stream-api.md for a tutorial and
the Storm -> Squall table.
"""

from __future__ import annotations

from streams.api.aggregators import Collect, CombinerAggregator, Counter, FunctionAggregator, Mean, Reducer, Summer
from streams.api.stream import PairStream, Stream, StreamBuilder, StreamState
from streams.api.windows import Count, Duration, SlidingWindows, TumblingWindows, Window

__all__ = [
    "Collect",
    "CombinerAggregator",
    "Count",
    "Counter",
    "Duration",
    "FunctionAggregator",
    "Mean",
    "PairStream",
    "Reducer",
    "SlidingWindows",
    "Stream",
    "StreamBuilder",
    "StreamState",
    "Summer",
    "TumblingWindows",
    "Window",
]
