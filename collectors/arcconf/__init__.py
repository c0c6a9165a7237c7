"""Adaptec / Microsemi / Microchip SmartRAID controllers through arcconf.

The pure parsers are :mod:`.parse`; the source that runs the tool is :mod:`.source`."""

from collectors import lazy_exports

# Imported on first use (collectors.lazy_exports): importing the package for its spec does not
# import the parsers (the agent reads the registry before it listens, issue 32).
_HOMES = {
    "Task": ("collectors.arcconf.parse", "Task"),
    "parse_getconfig": ("collectors.arcconf.parse", "parse_getconfig"),
    "parse_getstatus": ("collectors.arcconf.parse", "parse_getstatus"),
    "with_tasks": ("collectors.arcconf.parse", "with_tasks"),
}

__getattr__ = lazy_exports(__name__, _HOMES)

__all__ = ["parse_getconfig", "parse_getstatus", "with_tasks", "Task"]
