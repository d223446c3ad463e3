"""Reading Kafka (storm-kafka-client's ``kafka/spout/``).

Client factories, fetch gaps, the source protocol a Kafka-reading spout offers, the
executor's feed, offsets, retries and :class:`~streams.kafka.spout.KafkaSpout`.

Imports :mod:`streams.model` and below, never the executors.
"""
