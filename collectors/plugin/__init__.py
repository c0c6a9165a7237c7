"""Plug-ins: operator-configured commands that print drive records in the agent's own units
(docs/plugins.md). The contract in :mod:`collectors.plugin.contract`, the running source in
:mod:`collectors.plugin.source`."""
