"""The opt-in self-test scheduler (issue 30): smartd's ``-s (S/../.././02|L/../../6/03)`` as a
host source. Off by default. When ``selftest.enabled`` is true it starts a short self-test on
each ATA, NVMe and SCSI drive once a day and an extended ("long") one once a week, each within
an hour window, one drive at a time per host, never on a drive that is busy, already testing
or asleep, and keeps its schedule in the agent's state directory.

* :mod:`collectors.selftest.schedule`: the settings and the schedule maths (pure).
* :mod:`collectors.selftest.status`: what a drive says about its self-tests (pure parsers of
  ``smartctl -i -c -A -l selftest``), and the utilisation from two /proc/diskstats reads.
* :mod:`collectors.selftest.state`: the schedule kept on disk.
* :mod:`collectors.selftest.source`: the source: its commands, its probe-helper rule, its run.
* :mod:`collectors.selftest.view`: its metric families, API value, status lines and page.
"""
