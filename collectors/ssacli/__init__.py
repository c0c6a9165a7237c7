"""HPE Smart Array controllers through ssacli (hpssacli, hpacucli: the same output).

The pure parser is :mod:`.parse`; the source that runs the tool is :mod:`.source`."""

# Imported on first use (PEP 562): importing the package for its spec does not import the parsers
# (the agent reads the registry before it listens, issue 32).
_HOMES = {
    "parse_ssacli": ("collectors.ssacli.parse", "parse_ssacli"),
}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'collectors.ssacli' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home[0]), home[1])
    globals()[name] = value
    return value

__all__ = ["parse_ssacli"]
