"""The base install (no ``spark`` extra) loads and plans topologies, SparkBolt ones included:
pyspark, pyarrow and pandas are imported only where Spark runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "pyarrow", "pandas"):
            raise ImportError("blocked " + name)
        return None
sys.meta_path.insert(0, Block())
from streams.model.loader import load_topology
from service.control.scheduling import plan_workers
from streams.config import resolve
for f in ("wordcount.py", "wordcount_spark.py"):
    t = load_topology(sys.argv[1] + "/examples/" + f)
    print([[e.component for e in w] for w in plan_workers(t, resolve(t.conf))])
"""


def test_topologies_load_and_plan_without_the_spark_extra() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    plans = out.stdout.strip().splitlines()
    assert "['split']" in plans[1]  # the SparkBolt got a worker of its own


PLANNER = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyarrow", "pandas"):
            raise ImportError("blocked " + name)
        return None
sys.meta_path.insert(0, Block())
from streams.spark.datasource import SquallKafkaDataSource
print(SquallKafkaDataSource.name(), SquallKafkaDataSource({}).schema())
"""


def test_spark_s_planning_workers_load_the_data_sources_without_pyarrow() -> None:
    """Spark loads the data source class in each planning worker (lookup, create, the streaming
    runners): its module imports pyarrow and the reader only where rows are read or written."""
    out = subprocess.run([sys.executable, "-c", PLANNER], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "squall-kafka" and "value binary" in out.stdout
