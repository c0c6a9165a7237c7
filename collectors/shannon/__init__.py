"""Shannon Direct-IO PCIe flash cards, one sub-package: ``parse`` (pure parsers of
``shannon-status`` output and the driver's sysfs files), ``source`` (the registry's source and
its probe-helper rule). Other modules import the parsers from here."""

from collectors.shannon.parse import (
    ACCESS_READONLY,
    ACCESS_READWRITE,
    ACCESS_REDUCED_WRITE,
    SYSFS_FILES,
    ShannonProbe,
    parse_card_list,
    parse_status_a,
    parse_status_p,
    parse_sysfs,
)

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
