"""The Shakespeare word count in Trident, exactly once: lines -> words -> group by word -> persistent count.

    squall run examples/wordcount_trident.py [--input PATH] [--output counts.json]

It compiles (``TridentTopology.build``) to examples/wordcount_exactly_once.py's transactional
topology: ``lines`` (TransactionalKafkaSpout: txid batches) -> ``each`` (the tokeniser and a
``project`` to the word alone, fused into an ordinary bolt whose emits join their batch: a word
does not carry its line on) -> ``persistent_aggregate`` (fields grouping on
``word``; a committer that counts a batch per word and, at the batch's commit, strictly in
txid order, adds the counts to the ``counts`` state, ``word -> (txid, count)`` in SQLite by
default). A replayed batch re-reads the same lines and its commit is skipped if it was
already written: the counts are exact, whatever fails.
"""

from __future__ import annotations

import re

from streams import RecordTranslator, Topology, TransactionalKafkaSpout
from streams.trident import Count, StateFactory, TridentTopology

WORD = re.compile(r"[a-z']+")


def topology() -> Topology:
    t = TridentTopology()
    lines = t.new_stream("lines", TransactionalKafkaSpout(RecordTranslator("line"), partitions=2))
    words = lines.each(["line"], lambda line: WORD.findall(line.lower()), ["word"]).project(["word"]).parallelism_hint(2)
    words.group_by(["word"]).persistent_aggregate(StateFactory("counts", "transactional"), Count(), ["count"]).parallelism_hint(2)
    return t.build("wordcount-trident", {"topology.workers": 3, "topology.acker.executors": 1})
