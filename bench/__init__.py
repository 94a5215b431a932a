"""Benchmarks: each prints its figures next to an anchor measured or cited, as a ratio."""
