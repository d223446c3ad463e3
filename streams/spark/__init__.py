"""Spark Structured Streaming in Squall: a Kafka source/sink for PySpark and SparkBolt.

Needs the ``spark`` extra (``pip install -e '.[spark]'``): pyspark, pandas, pyarrow.
"""

from streams.spark.bolt import Emit, SparkBolt

__all__ = ["Emit", "SparkBolt"]
