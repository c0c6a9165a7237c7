"""ssdfleet collectors: one module per source, each a probe (I/O) and pure parsers."""
