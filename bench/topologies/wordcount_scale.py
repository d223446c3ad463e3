"""The acked word count (examples/wordcount.py) at a chosen size, for ``python -m bench scale``.

Same spout, ``Split`` and ``Count`` as the example, and the same single acker; only the sizes
differ. Read from the environment, so that the worker processes build the same topology:

* ``SQUALL_SCALE_WORKERS`` (default 4): ``topology.workers``;
* ``SQUALL_SCALE_TASKS`` (default 4): tasks of each component, i.e. the partitions of its input
  topic (the spout's ``lines``, ``split``'s and ``count``'s);
* ``SQUALL_SCALE_EXECUTORS`` (default ``min(workers, tasks)``, so every worker has a share of
  each component): executors per component. With 1 and 4 workers, each worker runs one
  component (the spout, ``split``, ``count``, the acker: executors are dealt round-robin), and
  its CPU is that component's.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from streams import KafkaSpout, RecordTranslator, Topology, TopologyBuilder

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "wordcount.py"


def _example() -> ModuleType:
    name = "squall_user_wordcount"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def topology() -> Topology:
    workers = int(os.environ.get("SQUALL_SCALE_WORKERS", "4"))
    tasks = int(os.environ.get("SQUALL_SCALE_TASKS", "4"))
    executors = int(os.environ.get("SQUALL_SCALE_EXECUTORS", str(min(workers, tasks))))
    wc = _example()
    builder = TopologyBuilder()
    builder.set_spout("lines", KafkaSpout(translator=RecordTranslator("line")), executors, num_tasks=tasks)
    builder.set_bolt("split", wc.Split(), executors, num_tasks=tasks).shuffle_grouping("lines")
    builder.set_bolt("count", wc.Count(), executors, num_tasks=tasks).fields_grouping("split", ["word"])
    builder.set_output("squall.{topology}.counts", "count", "counts", key_field="word", value_field="count", merge="sum")
    return builder.create_topology("wordcount", {"topology.workers": workers, "topology.acker.executors": 1})
