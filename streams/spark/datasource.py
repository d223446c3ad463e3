"""The ``squall-kafka`` data source (reader + writer) and :func:`register`.

    from streams.spark import register
    register(spark)
    df = spark.readStream.format("squall-kafka").option("bootstrap.servers", bs).option("subscribe", "in").load()
    df.select("key", "value").writeStream.format("squall-kafka").option("bootstrap.servers", bs) \
      .option("topic", "out").option("checkpointLocation", ckpt).start()

Options: :mod:`streams.spark.options`.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, DataSourceStreamWriter
from pyspark.sql.types import StructType
from typing_extensions import override

from streams.spark.sink import KafkaStreamWriter
from streams.spark.source import SCHEMA, KafkaStreamReader


class SquallKafkaDataSource(DataSource):
    """``format("squall-kafka")``: read and write Kafka topics from PySpark."""

    @override
    @classmethod
    def name(cls) -> str:
        return "squall-kafka"

    @override
    def schema(self) -> str:
        return SCHEMA

    @override
    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(self.options)

    @override
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return KafkaStreamWriter(self.options)


def register(spark: Any) -> None:
    """Register ``squall-kafka`` and ``squall-bolt`` with a SparkSession."""
    from streams.spark.bolt_sink import SquallBoltDataSource

    spark.dataSource.register(SquallKafkaDataSource)
    spark.dataSource.register(SquallBoltDataSource)
