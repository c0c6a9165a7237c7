"""The drive models the simulator knows, with the real output layout each one answers in.

Every layout file under ``simulator/layouts/`` is real tool output copied unchanged from the
project's fixture corpus (see ``layouts/PROVENANCE.tsv``); the simulator keeps its structure
(attribute IDs, names, flags, thresholds, the JSON document shape) and varies only the values.

Where no capture of the exact model exists, the nearest family's layout is used and the entry
says so in ``layout_note``:

* LITEON LCH-256V2S (the LITEON cache test): not in smartctl's drive database, and no capture of it exists
  in the corpus. Its sibling of the same V2 generation, the LITEON L8H-128V2G-HP, is also
  unknown to smartctl and prints the same generic names (``Unknown_Attribute`` for 173, the
  wear indicator, and ``Total_LBAs_Written`` for a counter that LITEON firmware keeps in
  32 MiB units). So the agent sees what it would see on a real one: no life left figure.
* OCZ RevoDrive3 X2 (the Shannon test): SandForce SF-2281 controllers behind a Marvell PCIe bridge.
  No capture exists; the SF-2281 layout of a Kingston HyperX 3K (SH103S3) stands in, reached
  as a SATA drive (``-d sat``) on its own ``/dev/sdX``, as the task statement asks.
* Patriot Wildfire 120 GB (the 270 TB test): SF-2281 as well; same Kingston SF-2281 layout.
* Intel 320 and 335 (the ZIL post): real layouts of the same series (SSDSA2CW120G3,
  SSDSC2CT060A3) at a different capacity.
* Samsung NVMe: a real PM983 (MZQLB1T9HAJR) document.
* Shannon Direct-IO 1.2 TB: the card of the Shannon test (driver 2.6.9, ``-a`` and ``-p``).

Rated P/E cycles and write amplification are the figures the published sources reason with;
where they say nothing the value is a plausible one for the NAND generation and is marked
``assumed``. The sources, by the short names the comments use:

* the Shannon test: digoal, "shannon PCI-E SSD VS OCZ RevoDrive3 X2 PCI-E SSD on CentOS 6.5"
  (2014), https://developer.aliyun.com/article/17226 (the 1.2 TB card's shannon-status reports, its rating, an OCZ RevoDrive 3 X2);
* the LITEON cache test: digoal, a LITEON LCH-256V2S under pg_test_fsync with its write cache
  on and off (2015), https://github.com/digoal/blog/blob/master/201512/20151220_08.md;
* the ZIL post: Aaron Toponce, "ZFS Administration, Part III - The ZFS Intent Log" (2012),
  https://pthree.org/2012/12/06/zfs-administration-part-iii-the-zfs-intent-log/ (Intel 320 and 335 P/E ratings, 3 MB/s of log writes);
* the 270 TB test: StorageReview, "SSD Performance Review - 270TB Written",
  https://storagereview.com/review/ssd-performance-review-270tb-written (a 120 GB Patriot Wildfire).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

TB = 10**12
GB = 10**9


@dataclass(frozen=True)
class CatalogueModel:
    key: str
    kind: str  # ata, nvme, shannon
    model: str
    family: Optional[str]  # smartctl's model family (None: not in its database)
    firmware: str
    capacity_bytes: int
    pe_cycles: float
    write_amplification: float
    writes_per_day: float  # a typical database-host load for this drive, host bytes
    layout: str  # file under simulator/layouts/
    idle_celsius: float
    busy_celsius: float
    serial_format: str  # str.format with n=index
    layout_note: str = ""
    factory_bad_ratio: float = 0.0
    spare_pool_ratio: float = 0.07
    late_bad_ratio: float = 0.03
    physical_capacity_bytes: Optional[int] = None
    overprovision_percent: Optional[float] = None


CATALOGUE: Dict[str, CatalogueModel] = {
    m.key: m
    for m in (
        CatalogueModel(
            key="shannon-directio-1200",
            kind="shannon",
            model="sh-shannon-pcie-ssd",
            family=None,
            firmware="0c321351",
            capacity_bytes=1200 * GB,
            physical_capacity_bytes=1632370000000,
            overprovision_percent=27.0,
            # the Shannon test: the vendor rates the card at capacity x 10,000; the card reported a
            # write amplifier of 1.45 under the author's pgbench load.
            pe_cycles=10000,
            write_amplification=1.45,
            writes_per_day=20 * TB,
            layout="shannon",
            idle_celsius=58,
            busy_celsius=74,
            serial_format="0068192461{n:06x}",
            factory_bad_ratio=0.010760,  # the Shannon test: "Media status: 1.0760% bad block"
            spare_pool_ratio=0.08,
            late_bad_ratio=0.06,
            layout_note="real: the Shannon test's shannon-status -a / -p, driver 2.6.9",
        ),
        CatalogueModel(
            key="liteon-lch-256v2s",
            kind="ata",
            model="LITEON LCH-256V2S",
            family=None,
            firmware="FC8020A",  # the LITEON cache test
            capacity_bytes=256060514304,  # the LITEON cache test
            pe_cycles=3000,  # assumed: 19 nm Toshiba MLC of that generation
            write_amplification=1.8,  # assumed
            writes_per_day=100 * GB,
            layout="ata-liteon-v2.txt",
            idle_celsius=30,
            busy_celsius=44,
            serial_format="0024481{n:05d}",
            layout_note="nearest: LITEON L8H-128V2G-HP (same V2 generation, also not in smartctl's database)",
        ),
        CatalogueModel(
            key="ocz-revodrive3-x2-960",
            kind="ata",
            model="OCZ-REVODRIVE3 X2",
            family="SandForce Driven SSDs",
            firmware="2.25",
            capacity_bytes=960197124096,
            pe_cycles=3000,  # assumed: 25 nm synchronous MLC
            write_amplification=1.1,  # assumed: SandForce on incompressible database pages
            writes_per_day=500 * GB,
            layout="ata-sandforce-sf2281.txt",
            idle_celsius=33,
            busy_celsius=50,
            serial_format="OCZ-{n:04d}5XK7Q3E41",
            layout_note="nearest: SandForce SF-2281 (Kingston HyperX 3K SH103S3); one SATA drive behind the Marvell bridge",
        ),
        CatalogueModel(
            key="intel-320-300",
            kind="ata",
            model="INTEL SSDSA2CW300G3",
            family="Intel 320 Series SSDs",
            firmware="4PC10362",
            capacity_bytes=300069052416,
            # the ZIL post: 25 nm MLC at ~5,000 P/E; the author's 3 MB/s lasts ~15 years, which
            # assumes no amplification, so neither does the simulation.
            pe_cycles=5000,
            write_amplification=1.0,
            writes_per_day=3 * 10**6 * 86400,
            layout="ata-intel320.txt",
            idle_celsius=28,
            busy_celsius=38,
            serial_format="CVPR{n:04d}0021300AGN",
            layout_note="real series layout: INTEL SSDSA2CW120G3",
        ),
        CatalogueModel(
            key="intel-335-240",
            kind="ata",
            model="INTEL SSDSC2CT240A4",
            family="Intel 330/335 Series SSDs",
            firmware="335u",
            capacity_bytes=240057409536,
            pe_cycles=3000,  # the ZIL post: 20 nm MLC at ~3,000 P/E, ~7 years at 3 MB/s
            write_amplification=1.0,
            writes_per_day=3 * 10**6 * 86400,
            layout="ata-intel335.txt",
            idle_celsius=29,
            busy_celsius=40,
            serial_format="CVMP{n:04d}02F240DGN",
            layout_note="real series layout: INTEL SSDSC2CT060A3",
        ),
        CatalogueModel(
            key="patriot-wildfire-120",
            kind="ata",
            model="Patriot Wildfire",
            family="SandForce Driven SSDs",
            firmware="332A",  # the 270 TB test: firmware updated from 319A to 332A
            capacity_bytes=120034123776,
            # the 270 TB test: 270 TB of incompressible writes left 21% of life. With 3,000 P/E
            # (24 nm toggle MLC) that is a write amplification of 3000*120e9*0.79/270e12.
            pe_cycles=3000,
            write_amplification=1.053,
            writes_per_day=150 * GB,  # the 270 TB test: "150 GB a day for five years"
            layout="ata-sandforce-sf2281.txt",
            idle_celsius=30,
            busy_celsius=42,
            serial_format="PT1210{n:05d}0003",
            layout_note="nearest: SandForce SF-2281 (Kingston HyperX 3K SH103S3); 241 in GiB",
        ),
        CatalogueModel(
            key="samsung-pm983-1920",
            kind="nvme",
            model="SAMSUNG MZQLB1T9HAJR-00007",
            family=None,
            firmware="EDA5202Q",
            capacity_bytes=1920383410176,
            # rated 1.3 DWPD for 3 years (the agent's table); at an assumed amplification of
            # 1.2 that is 1.3*365*3*1.92e12*1.2/1.92e12 = 1708 P/E of NAND.
            pe_cycles=1708.2,
            write_amplification=1.2,
            writes_per_day=1.5 * TB,
            layout="nvme-samsung-pm983.json",
            idle_celsius=35,
            busy_celsius=52,
            serial_format="S437NA0M{n:06d}",
            layout_note="real: SAMSUNG MZQLB1T9HAJR-00007 smartctl --json",
        ),
    )
}
