"""Squall benchmarks: ``python -m bench <acker|...> [--json PATH]`` (see bench/README.md)."""
