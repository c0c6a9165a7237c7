"""ssdfleet agent: poller, snapshot, metrics, HTTP API and CLI."""

__version__ = "0.1.0"
