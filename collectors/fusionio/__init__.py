"""Fusion-io / SanDisk ioMemory PCIe flash (``fio-status -a``): the pure parser in
:mod:`collectors.fusionio.parse`, the running source in :mod:`collectors.fusionio.source`."""
