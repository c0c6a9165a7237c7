"""The smartctl source, whole: the command lines and exit bits (:mod:`.json_report`'s
``SmartctlProbe``, :mod:`.source`), the ``-d`` pass-through types (:mod:`.passthrough`), the
JSON report of smartmontools 7+ (:mod:`.json_report`) and the text of 5.x/6.x
(:mod:`.text_report`), smartmontools' drive database (:mod:`.drivedb`), the ATA attribute
table and its trust rules (:mod:`.attributes`, :mod:`.ata`) and the per-protocol normaliser.

The names below are the package's public face; everything else is reached by module.
"""

# The names are imported on first use (PEP 562), so that importing the package (for its spec or
# the drive database) does not import the parsers: the agent's start reads the registry before
# it listens (issue 32).
_HOMES = {
    "parse_smartctl_text": "text_report",
    "parse_smartctl_text_reading": "text_report",
}


def __getattr__(name: str):
    if name in __all__:
        import importlib

        value = getattr(importlib.import_module(f"collectors.smartctl.{_HOMES.get(name, 'json_report')}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'collectors.smartctl' has no attribute {name!r}")


__all__ = [
    "NO_DATA_BITS", "NVME_DATA_UNIT_BYTES", "OLD_SMARTCTL_DROPS", "STANDBY_EXIT_STATUS", "NoSmartData",
    "ScanEntry", "SmartctlProbe", "is_standby", "normalise_smartctl", "parse_scan_json", "parse_scan_text",
    "parse_smartctl_json", "protocol_for_type", "smartctl_version", "supports_json", "parse_smartctl_text",
    "parse_smartctl_text_reading",
]
