"""HPE Smart Array controllers through ssacli (hpssacli, hpacucli: the same output).

The pure parser is :mod:`.parse`; the source that runs the tool is :mod:`.source`."""

from collectors import lazy_exports

# Imported on first use (collectors.lazy_exports): importing the package for its spec does not
# import the parsers (the agent reads the registry before it listens, issue 32).
_HOMES = {
    "parse_ssacli": ("collectors.ssacli.parse", "parse_ssacli"),
}

__getattr__ = lazy_exports(__name__, _HOMES)

__all__ = ["parse_ssacli"]
