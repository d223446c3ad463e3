"""Trident (Storm's ``org.apache.storm.trident``): exactly-once operations on txid batches, compiled onto Squall's transactional topologies.

See :mod:`streams.trident.topology` and docs/stream-api.md.
"""

from __future__ import annotations

from streams.trident.operations import (
    Aggregator,
    CombinerAggregator,
    Count,
    Filter,
    Function,
    MapGet,
    QueryFunction,
    ReducerAggregator,
    StateFactory,
    Sum,
    TridentCollector,
    TridentTuple,
)
from streams.trident.topology import GroupedStream, TridentState, TridentStream, TridentTopology

__all__ = [
    "Aggregator",
    "CombinerAggregator",
    "Count",
    "Filter",
    "Function",
    "GroupedStream",
    "MapGet",
    "QueryFunction",
    "ReducerAggregator",
    "StateFactory",
    "Sum",
    "TridentCollector",
    "TridentState",
    "TridentStream",
    "TridentTopology",
    "TridentTuple",
]
