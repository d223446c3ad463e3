"""When an executor's consumer has lost its group coordinator for good, and what to do then.

Every executor reads with an assign-only consumer (no group membership) and commits its
offsets to its component's group. librdkafka finds the group's coordinator again after a
broker fault, nearly always. Found on Apache Kafka 4.4 with librdkafka 2.12 (about one run
in ten of a 10 s SIGSTOP of the broker): the acker's consumer came back with every commit
failing ``_WAIT_COORD`` ("Waiting for coordinator") and fetched nothing more, for good; the
run stalled with every tree pending. Others report the same of assign-only consumers
(confluentinc/librdkafka#2791, #2725). Nothing in that client recovers; a new one does.

:class:`CommitWatch` is the rule, pure and with an injected clock: commits that fail without
a success in between for ``reopen_after_s`` seconds (``squall.consumer.reopen.after.secs``)
mean the consumer is to be replaced. The executor then closes it and opens a new one at the
positions it has processed (:func:`streams.kafka.clients.reopen_consumer`): nothing is
skipped, and what the old one had prefetched is fetched again.

>>> watch = CommitWatch("count", reopen_after_s=30.0)
>>> watch.failed(now=100.0), watch.failed(now=120.0), watch.failed(now=130.0)
(False, False, True)
>>> watch.failed(now=131.0)  # the watch starts again after it said so
False
>>> watch.ok(); watch.failing_since is None
True
"""

from __future__ import annotations


class CommitWatch:
    """Tells when a consumer's commits have failed for long enough to replace it.

    Args:
      component: the component id (for the caller's log lines).
      reopen_after_s: commits failing for this long, with no success in between, mean
        the consumer is stuck (seconds; > 0).

    Attributes:
      failing_since: when the current run of failures began (seconds, the caller's clock), or None.
      reopens: how many times :meth:`failed` said to replace the consumer.

    Raises:
      ValueError: ``reopen_after_s <= 0``.
    """

    def __init__(self, component: str, reopen_after_s: float) -> None:
        if reopen_after_s <= 0:
            raise ValueError(f"[{component}] reopen_after_s must be > 0, got {reopen_after_s}")
        self.component = component
        self.reopen_after_s = reopen_after_s
        self.failing_since: float | None = None
        self.reopens = 0

    def ok(self) -> None:
        """A commit succeeded: the consumer is fine."""
        self.failing_since = None

    def failed(self, now: float) -> bool:
        """A commit failed at ``now`` (seconds); True when the consumer is to be replaced now.

        True once per run of failures: the run starts again from the next failure.
        """
        if self.failing_since is None:
            self.failing_since = now
            return False
        if now - self.failing_since < self.reopen_after_s:
            return False
        self.failing_since = None
        self.reopens += 1
        return True
