"""NVMe through nvme-cli, one sub-package: ``nvme_cli`` (pure parsers of ``nvme smart-log``,
``nvme list``, ``nvme id-ctrl`` and the Intel plug-in's ``smart-log-add``), ``vendor`` (the
vendor logs as reading fields, with their evidence rules) and ``source`` (the registry's source
that asks each NVMe drive for its own vendor's log, and its probe-helper rule)."""
