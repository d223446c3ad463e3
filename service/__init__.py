"""Squall's service layer: CLI, config, embedded broker, worker supervisor, metrics."""
