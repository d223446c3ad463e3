"""Storm's acker on Kafka: a pure XOR ledger (:mod:`acker.ledger`) and its runtimes."""

from acker.ledger import Ledger, Outcome

__all__ = ["Ledger", "Outcome"]
