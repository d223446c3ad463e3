"""The ``squall-kafka`` data source (reader + writer) and :func:`register`.

    from streams.spark.datasource import register
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

from streams.spark.options import SCHEMA


class SquallKafkaDataSource(DataSource):
    """``format("squall-kafka")``: read and write Kafka topics from PySpark."""

    @override
    @classmethod
    def name(cls) -> str:
        return "squall-kafka"

    # The reader and writer are imported where they are made: Spark loads this class in each of
    # its planning workers (lookup, create, write, the streaming runners), and the reader's module
    # imports pyarrow and confluent-kafka, about 57 MB more in each of them.

    @override
    def schema(self) -> str:
        return SCHEMA

    @override
    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from streams.spark.source import KafkaStreamReader

        return KafkaStreamReader(self.options)

    @override
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from streams.spark.sink import KafkaStreamWriter

        return KafkaStreamWriter(self.options)


def register(spark: Any) -> None:
    """Register ``squall-kafka`` with a SparkSession."""
    spark.dataSource.register(SquallKafkaDataSource)
