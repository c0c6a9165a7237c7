"""HPE Smart Array controllers through ssacli (hpssacli, hpacucli: the same output).

Pure parser only (the source that runs the tool is wired in separately)."""

from collectors.ssacli.parse import parse_ssacli

__all__ = ["parse_ssacli"]
