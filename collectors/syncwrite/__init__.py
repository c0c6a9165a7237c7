"""The opt-in sync-write probe: the probe (:mod:`.probe`), its source (:mod:`.source`) and how
its results are shown (:mod:`.view`). The probe's names are importable from the package."""

from collectors import lazy_exports

# Imported on first use (collectors.lazy_exports): importing the package for its spec does not
# import the parsers (the agent reads the registry before it listens, issue 32).
_HOMES = {
    "METHOD_FDATASYNC": ("collectors.syncwrite.probe", "METHOD_FDATASYNC"),
    "METHOD_O_DSYNC": ("collectors.syncwrite.probe", "METHOD_O_DSYNC"),
    "MOUNTINFO": ("collectors.syncwrite.probe", "MOUNTINFO"),
    "PROBE_FILE_NAME": ("collectors.syncwrite.probe", "PROBE_FILE_NAME"),
    "SKIP_ERROR": ("collectors.syncwrite.probe", "SKIP_ERROR"),
    "SKIP_FAILURES": ("collectors.syncwrite.probe", "SKIP_FAILURES"),
    "SKIP_MISSING": ("collectors.syncwrite.probe", "SKIP_MISSING"),
    "SKIP_NEARLY_FULL": ("collectors.syncwrite.probe", "SKIP_NEARLY_FULL"),
    "SKIP_NO_PERMISSION": ("collectors.syncwrite.probe", "SKIP_NO_PERMISSION"),
    "SKIP_NOT_OURS": ("collectors.syncwrite.probe", "SKIP_NOT_OURS"),
    "SKIP_READ_ONLY": ("collectors.syncwrite.probe", "SKIP_READ_ONLY"),
    "SKIP_SANDBOX": ("collectors.syncwrite.probe", "SKIP_SANDBOX"),
    "SKIP_STUCK": ("collectors.syncwrite.probe", "SKIP_STUCK"),
    "Mount": ("collectors.syncwrite.probe", "Mount"),
    "SyncWriteProbe": ("collectors.syncwrite.probe", "SyncWriteProbe"),
    "SyncWriteResult": ("collectors.syncwrite.probe", "SyncWriteResult"),
    "SyncWriteSettings": ("collectors.syncwrite.probe", "SyncWriteSettings"),
    "block_device_of": ("collectors.syncwrite.probe", "block_device_of"),
    "mount_of": ("collectors.syncwrite.probe", "mount_of"),
    "parse_mountinfo": ("collectors.syncwrite.probe", "parse_mountinfo"),
    "quantile": ("collectors.syncwrite.probe", "quantile"),
    "read_only_reason": ("collectors.syncwrite.probe", "read_only_reason"),
    "run_burst": ("collectors.syncwrite.probe", "run_burst"),
    "summarise": ("collectors.syncwrite.probe", "summarise"),
    "SyncWrite": ("collectors.syncwrite.spec", "SyncWrite"),
    "probe_from_config": ("collectors.syncwrite.source", "probe_from_config"),
}

__getattr__ = lazy_exports(__name__, _HOMES)
