"""The bytes on Kafka: what every Squall process writes and reads.

The tuple envelope (:mod:`streams.wire.codec`), acker ops and results
(:mod:`streams.wire.acker`), dead-letter headers (:mod:`streams.wire.dead_letter`), topic
and group names (:mod:`streams.wire.naming`) and 64-bit ids (:mod:`streams.wire.ids`).
Each message has a JSON Schema in ``schemas/``. This layer imports only
:mod:`streams.exceptions` and :mod:`streams.config` (see docs/design.md, "Layers").
"""
