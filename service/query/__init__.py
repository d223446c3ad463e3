"""What the read-only verbs read from a topology's topics: status, errors, traces, dead letters, logs and live rates.

Storm's counterparts are ``storm list``/``monitor``/``get-errors`` and the UI's read paths
(``Nimbus.getTopologyInfo``). Everything here is read on demand from Kafka; nothing here writes
the control record (that is :mod:`service.control.client`), except ``squall dlq replay``, which
writes a dead letter back to its source topic.
"""
