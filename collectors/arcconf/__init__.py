"""Adaptec / Microsemi / Microchip SmartRAID controllers through arcconf.

The pure parsers are :mod:`.parse`; the source that runs the tool is :mod:`.source`."""

# Imported on first use (PEP 562): importing the package for its spec does not import the parsers
# (the agent reads the registry before it listens, issue 32).
_HOMES = {
    "Task": ("collectors.arcconf.parse", "Task"),
    "parse_getconfig": ("collectors.arcconf.parse", "parse_getconfig"),
    "parse_getstatus": ("collectors.arcconf.parse", "parse_getstatus"),
    "with_tasks": ("collectors.arcconf.parse", "with_tasks"),
}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'collectors.arcconf' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home[0]), home[1])
    globals()[name] = value
    return value

__all__ = ["parse_getconfig", "parse_getstatus", "with_tasks", "Task"]
