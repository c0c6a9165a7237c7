"""Shannon Direct-IO PCIe flash cards, one sub-package: ``parse`` (pure parsers of
``shannon-status`` output and the driver's sysfs files), ``source`` (the registry's source and
its probe-helper rule). Other modules import the parsers from here."""

from collectors import lazy_exports

# Imported on first use (collectors.lazy_exports): importing the package for its spec does not
# import the parsers (the agent reads the registry before it listens, issue 32).
_HOMES = {
    "ACCESS_READONLY": ("collectors.shannon.parse", "ACCESS_READONLY"),
    "ACCESS_READWRITE": ("collectors.shannon.parse", "ACCESS_READWRITE"),
    "ACCESS_REDUCED_WRITE": ("collectors.shannon.parse", "ACCESS_REDUCED_WRITE"),
    "SYSFS_FILES": ("collectors.shannon.parse", "SYSFS_FILES"),
    "ShannonProbe": ("collectors.shannon.parse", "ShannonProbe"),
    "parse_card_list": ("collectors.shannon.parse", "parse_card_list"),
    "parse_status_a": ("collectors.shannon.parse", "parse_status_a"),
    "parse_status_p": ("collectors.shannon.parse", "parse_status_p"),
    "parse_sysfs": ("collectors.shannon.parse", "parse_sysfs"),
}

__getattr__ = lazy_exports(__name__, _HOMES)

__all__ = [
    "ACCESS_READONLY",
    "ACCESS_READWRITE",
    "ACCESS_REDUCED_WRITE",
    "SYSFS_FILES",
    "ShannonProbe",
    "parse_card_list",
    "parse_status_a",
    "parse_status_p",
    "parse_sysfs",
]
