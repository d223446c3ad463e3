"""What executors publish and who reads it.

Stats snapshots and histograms, the spout's durable ledger and its store, and the board that
folds the stats topic.

Imports :mod:`streams.kafka` and below.
"""
