"""Simulated drives and hosts for the demo, the benchmarks and the scale test."""
