"""Peer implementations of the benchmark workloads, each run as its own process."""
