"""Helpers the test modules share: starting and scraping the real agent, fake processes and
clocks, the monitoring stack, page and status parsing. A test module imports helpers from here,
never from another test module (tests/test_import_graph.py), so a test file can move or go
without breaking others."""
