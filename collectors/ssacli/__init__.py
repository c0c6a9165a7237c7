"""HPE Smart Array controllers through ssacli (hpssacli, hpacucli: the same output).

The pure parser is :mod:`.parse`; the source that runs the tool is :mod:`.source`."""

from collectors.ssacli.parse import parse_ssacli

__all__ = ["parse_ssacli"]
