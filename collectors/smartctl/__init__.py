"""The smartctl source, whole: the command lines and exit bits (:mod:`.json_report`'s
``SmartctlProbe``, :mod:`.source`), the ``-d`` pass-through types (:mod:`.passthrough`), the
JSON report of smartmontools 7+ (:mod:`.json_report`) and the text of 5.x/6.x
(:mod:`.text_report`), smartmontools' drive database (:mod:`.drivedb`), the ATA attribute
table and its trust rules (:mod:`.attributes`, :mod:`.ata`) and the per-protocol normaliser.

The names below are the package's public face; everything else is reached by module.
"""

from collectors import lazy_exports

__all__ = [
    "NO_DATA_BITS", "NVME_DATA_UNIT_BYTES", "OLD_SMARTCTL_DROPS", "STANDBY_EXIT_STATUS", "NoSmartData",
    "ScanEntry", "SmartctlProbe", "is_standby", "normalise_smartctl", "parse_scan_json", "parse_scan_text",
    "parse_smartctl_json", "protocol_for_type", "smartctl_version", "supports_json", "parse_smartctl_text",
    "parse_smartctl_text_reading",
]

# Imported on first use (collectors.lazy_exports): the package is imported for its spec and
# drive database at the agent's start, the parsers when a source is built.
__getattr__ = lazy_exports(__name__, {
    name: (f"collectors.smartctl.{'text_report' if name.startswith('parse_smartctl_text') else 'json_report'}", name)
    for name in __all__})
