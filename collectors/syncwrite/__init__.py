"""The opt-in sync-write probe: the probe (:mod:`.probe`), its source (:mod:`.source`) and how
its results are shown (:mod:`.view`). The probe's names are importable from the package."""

from collectors.syncwrite.probe import (  # noqa: F401 (re-exported)
    METHOD_FDATASYNC,
    METHOD_O_DSYNC,
    MOUNTINFO,
    PROBE_FILE_NAME,
    SKIP_ERROR,
    SKIP_FAILURES,
    SKIP_MISSING,
    SKIP_NEARLY_FULL,
    SKIP_NO_PERMISSION,
    SKIP_NOT_OURS,
    SKIP_READ_ONLY,
    SKIP_SANDBOX,
    SKIP_STUCK,
    Mount,
    SyncWriteProbe,
    SyncWriteResult,
    SyncWriteSettings,
    block_device_of,
    mount_of,
    parse_mountinfo,
    quantile,
    read_only_reason,
    run_burst,
    summarise,
)
from collectors.syncwrite.source import SyncWrite, probe_from_config  # noqa: F401 (re-exported)
