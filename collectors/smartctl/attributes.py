"""What ATA SMART attributes mean, as a table.

An attribute ID on its own says little: 231 is ``SSD_Life_Left`` on a Kingston and
``Temperature_Celsius`` on another drive, 233 is Intel's ``Media_Wearout_Indicator``, Phison's
``Flash_Writes_GiB`` or a Dell-firmware ``Total_LBAs_Written``, and 202 is Micron's
``Percent_Lifetime_Remain`` but a Samsung ``Exception_Mode_Status``. smartctl already applies
its drive database when it prints a name, so the key here is (ID, printed name, optional model
family pattern). Each row says what the value means, its unit, and whether to read the
normalized (VALUE) column or the raw counter.

The rows were learnt from real output (tests/fixtures/smartctl-json and the shared
smartctl-text corpus). A name that is not in the table means nothing to us: better absent than
wrong.

:func:`interpret_attributes` applies the table to one drive's attribute list and returns the
chosen value per meaning in base units, with the row that produced it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

# Meanings.
LIFE_LEFT = "life_left"  # percent of rated life remaining
LIFE_USED = "life_used"  # percent of rated life consumed (may exceed 100)
# life left read off a wear-levelling counter's normalized value: a fallback only
WEAR_LEVELLING_LEFT = "wear_levelling_left"
HOST_WRITTEN = "host_written"
HOST_READ = "host_read"
NAND_WRITTEN = "nand_written"
SPARE_LEFT = "spare_left"  # percent of reserve blocks still available
HOST_PROGRAM_PAGES = "host_program_pages"  # Micron: NAND pages programmed for host writes
BACKGROUND_PROGRAM_PAGES = "background_program_pages"  # Micron: pages programmed by the FTL
# Average program/erase cycles per block so far: the NAND-side wear the drive has done.
AVERAGE_ERASE = "average_erase"
# The most erase cycles any count on the drive admits (Phison's maximum or average, whichever is
# larger): a ceiling on the NAND writes, used to refute host volumes no flash could have taken.
ERASE_CEILING = "erase_ceiling"
# The fewest erase cycles the counts admit (Phison's maximum or average, whichever is smaller):
# when firmware prints an average above the maximum, neither is a reading, but together they
# still say the flash has done at least the smaller; a life figure claiming less wear is not
# given (issue 29: a worn-out drive's Percentage Used frozen at 0 beside "3456 (Average 5390)").
ERASE_FLOOR = "erase_floor"
TEMPERATURE = "temperature"
REALLOCATED = "reallocated"
REALLOCATION_EVENTS = "reallocation_events"
PENDING = "pending"
OFFLINE_UNCORRECTABLE = "offline_uncorrectable"
PROGRAM_FAIL = "program_fail"
ERASE_FAIL = "erase_fail"
# Errors kept as context next to the defects: reads the drive could not correct and reported
# to the host (187), commands the host timed out (188), and CRC errors on the SATA link (199,
# a cable or backplane fault more often than a drive fault).
REPORTED_UNCORRECTABLE = "reported_uncorrectable"
COMMAND_TIMEOUT = "command_timeout"
UDMA_CRC_ERRORS = "udma_crc_errors"

DEFECT_MEANINGS = (
    REALLOCATED,
    REALLOCATION_EVENTS,
    PENDING,
    OFFLINE_UNCORRECTABLE,
    PROGRAM_FAIL,
    ERASE_FAIL,
    REPORTED_UNCORRECTABLE,
    COMMAND_TIMEOUT,
    UDMA_CRC_ERRORS,
)

# Units. "lba" is multiplied by the drive's logical sector size.
PERCENT = "percent"
LBA = "lba"
UNIT_32MIB = "32MiB"
UNIT_16MIB = "16MiB"
UNIT_2GIB = "2GiB"
GIB = "GiB"
GB = "GB"  # decimal gigabytes, 10**9
MIB = "MiB"
COUNT = "count"
# A count in the low 16 bits of the raw field. Seagate drives (and HP- and Maxtor-branded
# ones from Seagate) pack three 16-bit counters into 188 Command_Timeout; smartctl prints them
# high word first ("2 2 2" is raw 8590065666 in the JSON corpus) when its database knows the
# format, and as one 48-bit number (8590065673, 55835557908 in the text corpus) when it does
# not. Read as one number those are billions of timeouts; the low word is the running count
# and the upper words count the same events in longer-timeout classes. On drives with a plain
# counter (Micron, Plextor: 8, 27, 38 in the corpus) the low word is the whole value.
COUNT_LOW16 = "count_low16"
# Phison's 173 MaxAvgErase_Ct prints "910 (Average 891)": the maximum, then the average.
AVERAGE_IN_PARENS = "average_in_parens"
PAGES = "pages"
CELSIUS = "celsius"
# The counter exists on these drives but its unit is not known: the row claims the meaning
# so that no later, generic row reads it in the unit its printed name suggests.
UNKNOWN = "unknown"

_BYTES_PER_UNIT = {
    UNIT_32MIB: 32 * 1024 * 1024,
    UNIT_16MIB: 16 * 1024 * 1024,
    UNIT_2GIB: 2 * 1024**3,
    GIB: 1024**3,
    GB: 1000**3,
    MIB: 1024 * 1024,
}


def unit_bytes(unit: str, sector_bytes: int) -> Optional[int]:
    """Bytes in one count of a byte-valued ``unit`` (None for non-byte units)."""
    if unit == LBA:
        return sector_bytes
    return _BYTES_PER_UNIT.get(unit)

# Which column to read.
NORMALIZED = "normalized"
RAW = "raw"
# Vendors disagree where the percentage lives: Phison/Silicon Motion firmware keep the
# normalized VALUE at 100 and count down in the raw field, SandForce does the opposite and
# leaves raw at 0. Read raw when it is a plausible percentage (1..100), else normalized.
RAW_PERCENT = "raw_percent"
# The normalized VALUE, unless the firmware pins it at 100 and counts down in raw (1..99): the
# Phison controller inside drives the database files elsewhere (Corsair Force LS under
# "SandForce Driven SSDs" reads 100 / 94 with 94 the life left).
NORMALIZED_UNLESS_PINNED = "normalized_unless_pinned"


@dataclass(frozen=True)
class AttributeRule:
    """One row of the table."""

    attr_id: int
    name: str  # exactly as smartctl prints it
    meaning: str
    unit: str
    value: str  # NORMALIZED, RAW or RAW_PERCENT
    family: Optional[str] = None  # regex searched in "model_family model_name"; None = any drive
    note: str = ""
    not_family: Optional[str] = None  # regex: drives this generic row must not be applied to

    def matches(self, attr_id: int, name: str, drive: str) -> bool:
        if attr_id != self.attr_id or name != self.name:
            return False
        if self.not_family is not None and re.search(self.not_family, drive, re.IGNORECASE):
            return False
        return self.family is None or re.search(self.family, drive, re.IGNORECASE) is not None


_R = AttributeRule

# WD Blue / Red SA500-class SATA SSDs (Marvell controller; "WDS250G2B0A", "WDS400T1R0A").
# smartctl's drive database names their 233 NAND_GB_Written_TLC and 241 Host_Writes_GiB; a
# smartctl whose database lacks the model prints its defaults for the same raw counters,
# 233 Media_Wearout_Indicator and 241 Total_LBAs_Written (netdata's WDS400T1R0A capture).
# The WD Green "...G0A" models use another controller and other names, so they are not matched.
_WD_MARVELL = r"\bWDS\d{3}[GT]\d[BR]0A\b"

# Host write/read counters whose unit is not the one smartctl's printed name says. Each group
# was found by dividing the attribute by the same drive's ATA Device Statistics "Logical
# Sectors Written/Read" (ACS: counted in logical sectors, no vendor unit) over the vendored
# corpus; tests/sources/smartctl/test_host_writes.py re-does that division for every file and prints the
# table. Evidence per group: the model it was seen on and devstat / raw in 512-byte sectors.
# Raw counts in GiB (devstat / raw = 2**21 sectors): Apacer AS340 960GB (not the AS350, whose
# 241 is in sectors), Gigabyte GP-GSTFS30512GTTD, Hikvision HS-SSD-C100, KingSpec P3-256,
# Netac SSD 960GB, WDC HBS3A1996A7E6B1, Kingston SUV400 under the older "Kingston SSDNow
# UV400" database entry (the newer entry prints Host_Writes_GiB), and Supermicro's
# SMI-based "SuperMicro SSD" whose drive database entry prints Host_Writes_32MiB.
_GIB_241 = (
    r"\bApacer AS340 \d+GB\b|\bGIGABYTE GP-GSTFS\d|\bHS-SSD-C100\b|(?:^|\s)P3-(?:128|256|512|1TB|2TB)$"
    r"|\bNetac SSD 960GB\b|\bHBS3A\d{4}A7E6B1\b|\bKINGSTON SUV400S37\d+G\b"
)
_GIB_32MIB_NAME = r"\bSuperMicro SSD\b"
# Raw counts in 32 MiB (devstat / raw = 2**16 sectors) under the default names
# Total_LBAs_Written/Read: Dell-firmware Intel S3520 and S4x00, Intel 3710 and 540 (225
# Host_Writes_32MiB carries the same number), HPE MK001920GWTTL, Toshiba HK4R, Toshiba/OCZ
# TR150 ("Host_Writes"), and the small-vendor drives GS Nanotech GS SSD, INDMEM, Mushkin
# MKNSSDRE, ORTIAL, SPCC Solid State Disk, Team T253, XPG SX950U, DEPO SM3DT, Lite-On L8H and
# the HP-firmware LCH (LCH-256V2S-HP, 2C02/2C03), and QUMO SSD.
_32MIB_241 = (
    r"Dell Certified Intel S(?:3520|4x00)|Intel (?:3710|540) Series|\bMK\d{6}GWTTL\b|Toshiba HK4R"
    r"|\bGS SSD \d+|\bINDMEM SSD\b|\bMKNSSDRE\d+[GT]B\b|\bORTIAL SSD\b|\bSPCC Solid State Disk\b"
    r"|\bTEAM T253|\bXPG SX950U\b|\bDEPO SM3DT|\bLITEON L8H-|\bLITEON LCH-\d+V2S-HP\b|\bQUMO SSD\b"
)
# Lite-On's own-firmware LCH (the LCH-256V2S of seeds/001, firmware FC8020A): smartctl's database
# files it under "Silicon Motion based SSDs", whose entry names 241/242 Host_Writes_32MiB and
# Host_Reads_32MiB, but these firmwares count GiB. Each real report with device statistics says so:
# Logical Sectors Written equals raw x 2**21 sectors modulo 2**32 (the devstat counter kept in 32
# bits) to within one GiB, on GC72201 (LCH-128V2S), WC87901, 3C87902 and FC82202 (LCH-256V2S;
# tests/sources/smartctl/test_liteon_lch.py), and raw x 32 MiB is less than the device statistics' own count on every
# one of them. The HP firmware of the same drive (LCH-256V2S-HP) counts 32 MiB, as the entry says.
_LITEON_LCH_GIB = r"\bLITEON LCH-\d+V2S$"
# Raw counts in sectors although the name says 32 MiB or GiB (devstat / raw = 1, exactly):
# Patriot P200 (Silicon Motion) and SK hynix SC311.
_SECTORS_NAMED_32MIB = r"\bPatriot P200\b"
_SECTORS_NAMED_GIB = r"\bSK ?hynix SC311\b"
# SK hynix HFS3T8G32FEH: 233 "Media_Wearout_Indicator" raw is host writes in GiB (devstat /
# raw = 2**21 to 5 ppm) and 241 "Lifetime_Writes_GiB" is 1.63 times the host figure, so not
# host writes; what it does count is not known.
_SKH_FEH = r"\bHFS\w+G32FEH\b"
# Counters whose unit the corpus cannot settle; better absent than wrong:
# SanDisk CloudSpeed (SDLF1DAR, SDLFOCAM): raw 64 and 2432 while the drives logged 30 and
# 17 billion write commands (their devstat sector counters are below the command counts too);
# SanDisk SD7UB3Q 241: devstat / raw = 5,002,344 sectors, no unit; SSSTC ER2: devstat
# all ones; Seagate Desktop HDD.15 242: 125 times devstat Logical Sectors Read; Samsung
# MZ7LN1T0HAJQ (PM871a, linuxhw capture without device statistics): 241 3949 and 242 5176
# would be 2 MB written and 2.6 MB read in 3528 power-on hours, while 251 NAND_Writes
# (61261294592 sectors) and 249 (29211, the same volume in GiB) say 31 TB reached the NAND and
# 173 averages 28 erase cycles. Not sectors; no second counter on the drive fixes the unit.
_UNKNOWN_241 = r"Sandisk SATA (?:Cloudspeed|CS1K)|\bSanDisk SD7UB3Q|SSSTC ERX|\bSAMSUNG MZ7LN1T0HAJQ\b"
_UNKNOWN_242 = r"Sandisk SATA (?:Cloudspeed|CS1K)|SSSTC ERX|Seagate Desktop HDD\.15|\bSAMSUNG MZ7LN1T0HAJQ\b"

# Order matters inside one meaning: the first row that yields a valid value wins. Family
# rows come before generic rows with the same (ID, name).
ATTRIBUTE_TABLE: Tuple[AttributeRule, ...] = (
    # ---- life left / used -------------------------------------------------------------
    _R(202, "Percent_Lifetime_Remain", LIFE_LEFT, PERCENT, NORMALIZED,
       note="Crucial/Micron: the raw field counts percent used, the normalized value is left"),
    _R(202, "Percent_Lifetime_Used", LIFE_USED, PERCENT, RAW),
    _R(202, "Perc_Rated_Life_Used", LIFE_USED, PERCENT, RAW),
    # 231 SSD_Life_Left: Phison firmware keeps the normalized VALUE at 100 (or counts the
    # percentage *used* there) and the life left in raw, down to a real 0 on a worn drive;
    # SandForce leaves raw at 0 or packs other counters into it; Silicon Motion, the Kingston
    # UV400/UV500 and SK hynix firmware count the percentage *used* in raw. Read against
    # ATA Device Statistics over the bsdhw training reports: Phison raw = life left on 29 of
    # 30 drives where the columns differ, every other family normalized = life left.
    _R(231, "SSD_Life_Left", LIFE_LEFT, PERCENT, RAW, family=r"\bPhison\b",
       note="Phison: raw is life left, 0 on a worn drive"),
    _R(231, "SSD_Life_Left", LIFE_LEFT, PERCENT, NORMALIZED_UNLESS_PINNED,
       note="SandForce, Silicon Motion, Kingston UV400/500, SK hynix: normalized is life left"),
    _R(231, "SSD_Life_Left_Perc", LIFE_LEFT, PERCENT, NORMALIZED),
    _R(231, "Lifetime_Left", LIFE_LEFT, PERCENT, NORMALIZED),
    _R(231, "Remaining_Lifetime_Perc", LIFE_LEFT, PERCENT, RAW_PERCENT),
    _R(169, "Remaining_Lifetime_Perc", LIFE_LEFT, PERCENT, RAW_PERCENT,
       note="Silicon Motion: normalized stays 100, raw is the percentage"),
    _R(233, "Remaining_Lifetime_Perc", LIFE_LEFT, PERCENT, RAW_PERCENT),
    # Intel's definition (normalized falls from 100 to 1 as the rated P/E cycles are used). Other
    # firmware keeps smartctl's default name for counters of its own: SK hynix counts the
    # percentage used in VALUE, Plextor and WD keep VALUE at 100 next to raw volume counts.
    _R(233, "Media_Wearout_Indicator", LIFE_LEFT, PERCENT, NORMALIZED, family=r"\bIntel\b|Indilinx Barefoot_2/Everest",
       note="Intel: normalized falls from 100 to 1 as rated P/E cycles are used",
       not_family=_WD_MARVELL),
    # No row for 230 Media_Wearout_Indicator: in the corpus it appears only on WD Blue/Red
    # SSDs, whose normalized value is not life left (015 on a WDS100T2B0A whose device
    # statistics say 5% used, with 57 average P/E cycles).
    _R(245, "Percent_Life_Remaining", LIFE_LEFT, PERCENT, NORMALIZED),
    _R(245, "Drive_Life_Remaining%", LIFE_LEFT, PERCENT, NORMALIZED),
    _R(245, "DriveLife_Used%", LIFE_USED, PERCENT, RAW),
    _R(177, "DriveLife_Remaining%", LIFE_LEFT, PERCENT, RAW_PERCENT),
    _R(201, "Lifetime_Remaining%", LIFE_LEFT, PERCENT, NORMALIZED),
    _R(201, "Percent_Lifetime_Remain", LIFE_LEFT, PERCENT, NORMALIZED, note="SK hynix"),
    # Wear-levelling counters: the raw field is an erase count. The normalized 177 is the life
    # left on Samsung, SK hynix, Kingston UV400/UV500 and Crucial/Micron client drives (it matched
    # device statistics on every such drive in the bsdhw training reports that has both); on
    # other controllers the same name's VALUE did not (Silicon Motion: 23 of 54 disagree; Plextor
    # stays at 100 after 67 drive writes; Crucial m4 173: 5 of 13), so there it is not read as
    # life. Used only when no explicit life attribute exists.
    _R(177, "Wear_Leveling_Count", WEAR_LEVELLING_LEFT, PERCENT, NORMALIZED,
       family=r"Samsung|SK hynix|Kingston SSDNow UV|Crucial/Micron Client"),
    # The same counter at 173 where the drive database puts it for the model: "Samsung based SSDs"
    # names 173 Wear_Leveling_Count for the CM871/PM871 (its 177 is only a listed default), and
    # "SK hynix SATA SSDs" names it 173 with 177 commented out. VALUE is the life left there too:
    # 97 on an SK hynix SC313 whose device statistics say 3% used; 97 on a PM871a (MZ7LN1T0HAJQ)
    # whose raw average of 28 erase cycles matches its 31 TB of NAND writes (251) on 1 TB.
    _R(173, "Wear_Leveling_Count", WEAR_LEVELLING_LEFT, PERCENT, NORMALIZED, family=r"Samsung|SK hynix"),
    # ---- host writes ------------------------------------------------------------------
    # Explicit units first: on Dell-firmware Intel S3520s smartctl prints 241 and 233 as
    # Total_LBAs_Written, but they carry the same number as 225 Host_Writes_32MiB.
    _R(225, "Host_Writes_32MiB", HOST_WRITTEN, UNIT_32MIB, RAW),
    _R(241, "Host_Writes_32MiB", HOST_WRITTEN, GIB, RAW, family=_LITEON_LCH_GIB,
       note="Lite-On LCH own firmware: GiB, not the 32 MiB the database's name says"),
    _R(241, "Total_LBAs_Written", HOST_WRITTEN, GIB, RAW, family=_LITEON_LCH_GIB),
    _R(241, "Total_LBAs_Written", HOST_WRITTEN, UNIT_32MIB, RAW, family=_32MIB_241,
       note="Intel and small-vendor firmware count 32 MiB units under the generic name"),
    _R(233, "Total_LBAs_Written", HOST_WRITTEN, UNIT_32MIB, RAW, family=r"Dell Certified Intel S(?:3520|4x00)"),
    _R(241, "Total_LBAs_Written", HOST_WRITTEN, GIB, RAW, family=_GIB_241),
    _R(241, "Host_Writes", HOST_WRITTEN, UNIT_32MIB, RAW, family=r"OCZ/Toshiba Trion"),
    _R(241, "Host_Writes_32MiB", HOST_WRITTEN, GIB, RAW, family=_GIB_32MIB_NAME),
    _R(241, "Host_Writes_32MiB", HOST_WRITTEN, LBA, RAW, family=_SECTORS_NAMED_32MIB),
    _R(241, "Total_Writes_GiB", HOST_WRITTEN, LBA, RAW, family=_SECTORS_NAMED_GIB),
    _R(241, "Total_Writes_GB", HOST_WRITTEN, LBA, RAW, family=_SECTORS_NAMED_GIB,
       note="drivedb r5319 prints Total_Writes_GB for the same counter"),
    _R(241, "Total_LBAs_Written", HOST_WRITTEN, MIB, RAW, family=r"\bBIWIN SSD\b",
       note="devstat / raw = 2048 sectors"),
    _R(241, "Total_Writes_GiB", HOST_WRITTEN, UNIT_16MIB, RAW, family=r"\bSanDisk SD8SN8U-",
       note="raw x 2**15 sectors is the devstat write figure (printed one slot off) and 242 x 2**15 "
            "is Logical Sectors Read"),
    _R(233, "Media_Wearout_Indicator", HOST_WRITTEN, GIB, RAW, family=_SKH_FEH),
    _R(241, "Lifetime_Writes_GiB", HOST_WRITTEN, UNKNOWN, RAW, family=_SKH_FEH),
    _R(241, "Total_LBAs_Written", HOST_WRITTEN, UNKNOWN, RAW, family=_UNKNOWN_241),
    # Default names smartctl prints when its database lacks the model; raw equals devstat
    # Logical Sectors Written: Crucial BX500, Micron 5100 (older database), Micron RealSSD C400
    # (IBM 90Y8649).
    _R(246, "Unknown_Attribute", HOST_WRITTEN, LBA, RAW, family=r"\bCT\d+BX500SSD1\b"),
    _R(246, "Unknown_Micron_Attrib", HOST_WRITTEN, LBA, RAW, family=r"Micron 5100"),
    _R(233, "Media_Wearout_Indicator", HOST_WRITTEN, LBA, RAW, family=r"Micron 5100"),
    _R(225, "Unknown_Marvell_Attr", HOST_WRITTEN, LBA, RAW, family=r"Crucial/Micron RealSSD m4/C400"),
    _R(241, "Host_Writes_32MiB", HOST_WRITTEN, UNIT_32MIB, RAW),
    _R(241, "Lifetime_Writes_GiB", HOST_WRITTEN, GIB, RAW,
       note="SandForce/Phison count GiB, not sectors: never multiply by 512"),
    _R(241, "Host_Writes_GiB", HOST_WRITTEN, GIB, RAW),
    _R(241, "Total_Writes_GiB", HOST_WRITTEN, GIB, RAW),
    _R(241, "Total_Writes_GB", HOST_WRITTEN, GB, RAW),
    # "GB" in these two names is GiB: devstat / raw = 2**21 sectors on a WD Green WDS240G2G0A
    # and a Seagate Nytro XA480ME10063, for writes and reads alike (as GB they read 6.9% low).
    _R(241, "Total_Host_GB_Written", HOST_WRITTEN, GIB, RAW),
    _R(241, "Lifetime_Wts_Frm_Hst_GB", HOST_WRITTEN, GIB, RAW),
    _R(175, "Host_Writes_MiB", HOST_WRITTEN, MIB, RAW),
    _R(241, "Total_LBAs_Written", HOST_WRITTEN, GIB, RAW, family=_WD_MARVELL,
       note="smartctl default name for WD's Host_Writes_GiB"),
    _R(241, "Total_LBAs_Written", HOST_WRITTEN, LBA, RAW),
    _R(246, "Total_LBAs_Written", HOST_WRITTEN, LBA, RAW, note="Crucial/Micron"),
    _R(246, "Total_Host_Sector_Write", HOST_WRITTEN, LBA, RAW),
    # ---- host reads -------------------------------------------------------------------
    _R(242, "Host_Reads_32MiB", HOST_READ, GIB, RAW, family=_LITEON_LCH_GIB),
    _R(242, "Total_LBAs_Read", HOST_READ, GIB, RAW, family=_LITEON_LCH_GIB),
    _R(242, "Total_LBAs_Read", HOST_READ, UNIT_32MIB, RAW, family=_32MIB_241),
    _R(242, "Total_LBAs_Read", HOST_READ, GIB, RAW, family=_GIB_241),
    _R(242, "Host_Reads_32MiB", HOST_READ, GIB, RAW, family=_GIB_32MIB_NAME),
    _R(242, "Host_Reads_32MiB", HOST_READ, LBA, RAW, family=_SECTORS_NAMED_32MIB),
    _R(242, "Total_Reads_GiB", HOST_READ, LBA, RAW, family=_SECTORS_NAMED_GIB),
    _R(242, "Total_Reads_GB", HOST_READ, LBA, RAW, family=_SECTORS_NAMED_GIB),
    _R(242, "Total_LBAs_Read", HOST_READ, MIB, RAW, family=r"\bBIWIN SSD\b"),
    _R(242, "Total_Reads_GiB", HOST_READ, UNIT_16MIB, RAW, family=r"\bSanDisk SD8SN8U-"),
    _R(242, "Total_LBAs_Read", HOST_READ, UNIT_2GIB, RAW, family=r"\bSanDisk SD7UB3Q",
       note="devstat / raw = 2**22 sectors to 30 ppm; 241 on the same drive fits no unit"),
    _R(242, "Total_LBAs_Read", HOST_READ, UNKNOWN, RAW, family=_UNKNOWN_242),
    _R(242, "Host_Reads_32MiB", HOST_READ, UNIT_32MIB, RAW),
    _R(242, "Lifetime_Reads_GiB", HOST_READ, GIB, RAW),
    _R(242, "Total_Reads_GiB", HOST_READ, GIB, RAW),
    _R(242, "Host_Reads_GiB", HOST_READ, GIB, RAW),
    _R(242, "Total_Host_GB_Read", HOST_READ, GIB, RAW),
    _R(242, "Lifetime_Rds_Frm_Hst_GB", HOST_READ, GIB, RAW),
    _R(174, "Host_Reads_MiB", HOST_READ, MIB, RAW),
    _R(242, "Total_LBAs_Read", HOST_READ, GIB, RAW, family=_WD_MARVELL),
    _R(242, "Total_LBAs_Read", HOST_READ, LBA, RAW),
    # ---- NAND writes ------------------------------------------------------------------
    _R(243, "NAND_Writes_32MiB", NAND_WRITTEN, UNIT_32MIB, RAW),
    # SandForce SF-1200/SF-2200 firmware ("SandForce Driven SSDs": OCZ Vertex 2/3, Agility 3,
    # Kingston HyperX/V300, Corsair Force 3, ADATA SP900, Mushkin): the database names 233 only
    # SandForce_Internal, but SandForce's attribute set counts the GiB written to the flash there
    # (234, like 241 Lifetime_Writes_GiB, counts the host's; the two are equal on every such drive
    # in the corpus), and the database itself names the same counter NAND_GiB_Written on the
    # SanDisk members of the family. Read as GiB it agrees with the drives' own wear: 410 NAND
    # cycles at 11% used (OCZ Agility 3), 705 at 15% (Mushkin Chronos), 367 at 9% (Kingston V300),
    # i.e. 3,500-5,000 rated cycles, the MLC these drives carry (tests/sources/smartctl/test_sandforce.py).
    _R(233, "SandForce_Internal", NAND_WRITTEN, GIB, RAW, family=r"SandForce Driven SSDs",
       note="SandForce: GiB written to the flash"),
    _R(249, "NAND_Writes_1GiB", NAND_WRITTEN, GIB, RAW),
    _R(243, "NAND_Writes_GiB", NAND_WRITTEN, GIB, RAW),
    _R(233, "Flash_Writes_GiB", NAND_WRITTEN, GIB, RAW, note="Phison"),
    _R(233, "NAND_GiB_Written", NAND_WRITTEN, GIB, RAW),
    _R(233, "NAND_Writes_1GiB", NAND_WRITTEN, GIB, RAW),
    _R(233, "Total_NAND_Writes_GiB", NAND_WRITTEN, GIB, RAW),
    _R(233, "Lifetime_Nand_Writes", NAND_WRITTEN, GIB, RAW),
    _R(233, "Lifetime_Wts_To_Flsh_GB", NAND_WRITTEN, GB, RAW),
    _R(233, "NAND_GB_Written_TLC", NAND_WRITTEN, GB, RAW),
    _R(233, "Media_Wearout_Indicator", NAND_WRITTEN, GB, RAW, family=_WD_MARVELL,
       note="smartctl default name for WD's NAND_GB_Written_TLC"),
    _R(249, "TLC_NAND_GB_Writes", NAND_WRITTEN, GB, RAW),
    # Samsung PM8xx: counts 512-byte units like its 241 Total_LBAs_Written
    _R(251, "NAND_Writes", NAND_WRITTEN, LBA, RAW),
    # Micron: page counters only; page size is not reported, so they give write
    # amplification (host + background pages) / host pages, not bytes.
    _R(247, "Host_Program_Page_Count", HOST_PROGRAM_PAGES, PAGES, RAW),
    _R(248, "Bckgnd_Program_Page_Cnt", BACKGROUND_PROGRAM_PAGES, PAGES, RAW),
    _R(248, "FTL_Program_Page_Count", BACKGROUND_PROGRAM_PAGES, PAGES, RAW),
    # ---- average erase count (per block, raw) -------------------------------------------
    _R(173, "MaxAvgErase_Ct", AVERAGE_ERASE, AVERAGE_IN_PARENS, RAW, note="Phison: 'max (Average avg)'"),
    _R(173, "MaxAvgErase_Ct", ERASE_CEILING, AVERAGE_IN_PARENS, RAW),
    _R(173, "MaxAvgErase_Ct", ERASE_FLOOR, AVERAGE_IN_PARENS, RAW),
    _R(167, "Average_Erase_Count", AVERAGE_ERASE, COUNT, RAW, note="Silicon Motion"),
    # (Not 164 Average_Erase_Count: Apacer AS340 firmware reads 66179 there after 3519 hours and
    # 17 drive writes, a total rather than an average.)
    _R(173, "Ave_Block-Erase_Count", AVERAGE_ERASE, COUNT, RAW, note="Crucial/Micron"),
    _R(173, "Avg_Block-Erase_Count", AVERAGE_ERASE, COUNT, RAW),
    _R(173, "Average_PE_Cycles_TLC", AVERAGE_ERASE, COUNT, RAW),
    _R(173, "Average_PE_Count", AVERAGE_ERASE, COUNT, RAW),
    _R(173, "Avg_Write/Erase_Count", AVERAGE_ERASE, COUNT, RAW, note="SanDisk"),
    _R(173, "Avg_Program/Erase_Ct", AVERAGE_ERASE, COUNT, RAW),
    _R(173, "Wear_Leveling_Count", AVERAGE_ERASE, COUNT, RAW, family=r"Crucial|Micron|Samsung|SK hynix",
       note="Crucial/Micron m4/C400, Samsung CM871/PM871, SK hynix: raw is the average block erase count"),
    _R(177, "Wear_Leveling_Count", AVERAGE_ERASE, COUNT, RAW, family=r"Samsung"),
    # ---- spare ------------------------------------------------------------------------
    _R(232, "Available_Reservd_Space", SPARE_LEFT, PERCENT, NORMALIZED),
    _R(170, "Available_Reservd_Space", SPARE_LEFT, PERCENT, NORMALIZED),
    _R(232, "Perc_Avail_Resrvd_Space", SPARE_LEFT, PERCENT, NORMALIZED),
    _R(170, "Reserved_Block_Pct", SPARE_LEFT, PERCENT, NORMALIZED),
    _R(170, "Reserve_Block_Count", SPARE_LEFT, PERCENT, NORMALIZED),
    # Samsung's normalized 180 is the percentage of reserve blocks left; Micron's 180
    # normalized value is not a percentage (seen at 1 on a healthy 5100), so family only.
    _R(180, "Unused_Rsvd_Blk_Cnt_Tot", SPARE_LEFT, PERCENT, NORMALIZED, family=r"Samsung"),
    # ---- defects (raw counts) ---------------------------------------------------------
    _R(5, "Reallocated_Sector_Ct", REALLOCATED, COUNT, RAW),
    _R(5, "Reallocate_NAND_Blk_Cnt", REALLOCATED, COUNT, RAW),
    _R(5, "Retired_Block_Count", REALLOCATED, COUNT, RAW),
    _R(196, "Reallocated_Event_Count", REALLOCATION_EVENTS, COUNT, RAW),
    _R(197, "Current_Pending_Sector", PENDING, COUNT, RAW),
    _R(197, "Pending_Sector_Count", PENDING, COUNT, RAW),
    _R(197, "Total_Pending_Sectors", PENDING, COUNT, RAW),
    _R(197, "Current_Pending_ECC_Cnt", PENDING, COUNT, RAW),
    _R(198, "Offline_Uncorrectable", OFFLINE_UNCORRECTABLE, COUNT, RAW),
    _R(198, "Total_Offl_Uncorrectabl", OFFLINE_UNCORRECTABLE, COUNT, RAW),
    _R(198, "Uncorrectable_Sector_Ct", OFFLINE_UNCORRECTABLE, COUNT, RAW),
    _R(171, "Program_Fail_Count", PROGRAM_FAIL, COUNT, RAW),
    _R(171, "Program_Fail_Ct", PROGRAM_FAIL, COUNT, RAW),
    _R(181, "Program_Fail_Cnt_Total", PROGRAM_FAIL, COUNT, RAW),
    _R(181, "Program_Fail_Count", PROGRAM_FAIL, COUNT, RAW),
    _R(175, "Program_Fail_Count_Chip", PROGRAM_FAIL, COUNT, RAW),
    _R(172, "Erase_Fail_Count", ERASE_FAIL, COUNT, RAW),
    _R(172, "Erase_Fail_Ct", ERASE_FAIL, COUNT, RAW),
    _R(182, "Erase_Fail_Count_Total", ERASE_FAIL, COUNT, RAW),
    _R(182, "Erase_Fail_Count", ERASE_FAIL, COUNT, RAW),
    _R(176, "Erase_Fail_Count_Chip", ERASE_FAIL, COUNT, RAW),
    # Errors as context. 187 and 188 are left alone when smartctl's database does not know the
    # drive and prints Unknown_Attribute (26 and 23 such rows in the text corpus): the ID
    # alone is not a meaning. Every name the corpus prints for 199 is the SATA link CRC count.
    _R(187, "Reported_Uncorrect", REPORTED_UNCORRECTABLE, COUNT, RAW),
    _R(187, "Uncorrectable_Error_Cnt", REPORTED_UNCORRECTABLE, COUNT, RAW, note="Samsung"),
    _R(187, "Uncorrectable_ECC_Ct", REPORTED_UNCORRECTABLE, COUNT, RAW, note="Seagate Nytro SATA"),
    _R(188, "Command_Timeout", COMMAND_TIMEOUT, COUNT_LOW16, RAW),
    _R(199, "UDMA_CRC_Error_Count", UDMA_CRC_ERRORS, COUNT, RAW),
    _R(199, "CRC_Error_Count", UDMA_CRC_ERRORS, COUNT, RAW, note="Samsung, Intel, Phison"),
    _R(199, "SATA_CRC_Error_Count", UDMA_CRC_ERRORS, COUNT, RAW, note="Phison, SandForce"),
    _R(199, "SATA_CRC_Error", UDMA_CRC_ERRORS, COUNT, RAW, note="Marvell-based SanDisk"),
    # ---- temperature (raw: the low field; smartctl's raw string starts with it) ------
    _R(194, "Temperature_Celsius", TEMPERATURE, CELSIUS, RAW),
    _R(194, "Temperature_Internal", TEMPERATURE, CELSIUS, RAW),
    _R(194, "Temperature_Centigrade", TEMPERATURE, CELSIUS, RAW),
    _R(194, "Drive_Temperature", TEMPERATURE, CELSIUS, RAW),
    _R(190, "Temperature_Celsius", TEMPERATURE, CELSIUS, RAW),
    _R(190, "Airflow_Temperature_Cel", TEMPERATURE, CELSIUS, RAW),
    _R(190, "Temperature_Case", TEMPERATURE, CELSIUS, RAW),
    _R(190, "Drive_Temperature", TEMPERATURE, CELSIUS, RAW),
    _R(190, "Case_Temperature", TEMPERATURE, CELSIUS, RAW),
    # smartctl's default name for 231 when the drive is not in its database; on such drives
    # it is often not a temperature at all (raw 0 next to a real 194), so it comes last and
    # is never read as life left.
    _R(231, "Temperature_Celsius", TEMPERATURE, CELSIUS, RAW),
)


@dataclass(frozen=True)
class Attribute:
    """One row of smartctl's attribute table, as far as we need it."""

    attr_id: int
    name: str
    normalized: Optional[int]
    threshold: Optional[int]
    raw: Optional[int]
    raw_string: Optional[str] = None
    # How far smartmontools' drive database vouches for ``name`` on this model
    # (collectors.smartctl.drivedb: named, confirmed, default, unknown_drive). Rows without a model
    # family read life and volume only off vouched names: on a drive the database does not
    # describe, a default name such as 241 Total_LBAs_Written says nothing about the unit.
    trust: str = "named"

    @property
    def vouched(self) -> bool:
        return self.trust in ("named", "confirmed")


@dataclass(frozen=True)
class Finding:
    """A value the table produced, in base units (percent stays percent here)."""

    meaning: str
    value: float
    rule: AttributeRule
    attribute: Attribute
    column: str  # the column actually read: normalized or raw

    @property
    def source(self) -> str:
        return f"ata {self.attribute.attr_id} {self.attribute.name} {self.column}"


LIFE_MEANINGS = frozenset({LIFE_LEFT, LIFE_USED, WEAR_LEVELLING_LEFT})

# Meanings a generic row (no model family) may read only off a name the drive database vouches
# for: percentages and volumes, whose column and unit vary by firmware.
NEEDS_VOUCHED_NAME = frozenset({
    LIFE_LEFT, LIFE_USED, WEAR_LEVELLING_LEFT, HOST_WRITTEN, HOST_READ, NAND_WRITTEN, SPARE_LEFT,
    HOST_PROGRAM_PAGES, BACKGROUND_PROGRAM_PAGES,
})


@dataclass
class AttributeFindings:
    """The first valid finding per meaning."""

    by_meaning: Dict[str, Finding] = field(default_factory=dict)
    # meanings an UNKNOWN-unit row claimed: the counter is there, its unit is not known
    withheld: Dict[str, str] = field(default_factory=dict)
    # meanings whose only attribute carries a default name the drive database does not vouch for
    unvouched: Dict[str, Attribute] = field(default_factory=dict)
    attributes: Tuple[Attribute, ...] = ()
    # further life figures from other attributes (the first per meaning is in by_meaning)
    also: List[Finding] = field(default_factory=list)
    # explicit life attributes present whose value is not a percentage
    invalid_life: List[Attribute] = field(default_factory=list)

    def get(self, meaning: str) -> Optional[Finding]:
        return self.by_meaning.get(meaning)

    def value(self, meaning: str) -> Optional[float]:
        found = self.by_meaning.get(meaning)
        return None if found is None else found.value


def find_rule(attr_id: int, name: str, drive: str = "") -> Optional[AttributeRule]:
    """The first table row for this (ID, printed name) that applies to ``drive``
    (``"model_family model_name"``)."""
    for rule in ATTRIBUTE_TABLE:
        if rule.matches(attr_id, name, drive):
            return rule
    return None


def _leading_int(text: Optional[str]) -> Optional[int]:
    if not text:
        return None
    match = re.match(r"\s*(\d{1,20})(?!\d)", text)  # 20 digits hold the widest raw field (64 bits)
    return int(match.group(1)) if match else None


# The widest raw value smartctl can print for an attribute: its raw56/raw64 formats join the
# reserved byte and the normalized value to the 48-bit raw field. Anything larger is garbage.
_RAW_LIMIT = 2**64


def _read(rule: AttributeRule, attr: Attribute, sector_bytes: int) -> Optional[Tuple[float, str]]:
    if (attr.raw is not None and attr.raw >= _RAW_LIMIT) or (attr.normalized is not None and attr.normalized >= _RAW_LIMIT):
        return None  # not a value the attribute's fields can hold
    """The value of ``attr`` under ``rule`` in base units, or None when implausible."""
    if rule.unit == PERCENT:
        column = rule.value
        if rule.value == RAW_PERCENT:
            column = RAW if attr.raw is not None and 0 < attr.raw <= 100 else NORMALIZED
        elif rule.value == NORMALIZED_UNLESS_PINNED:
            pinned = attr.normalized == 100 and attr.raw is not None and 0 < attr.raw < 100
            column = RAW if pinned else NORMALIZED
        number = attr.normalized if column == NORMALIZED else attr.raw
        if number is None:
            return None
        # A normalized value above 100 (200, 253) is not a percentage on this drive.
        if number < 0 or (column == NORMALIZED and number > 100):
            return None
        if rule.meaning != LIFE_USED and number > 100:
            return None
        return float(number), column
    if rule.unit == CELSIUS:
        # The raw field packs current/min/max; smartctl's raw string starts with the current.
        number = _leading_int(attr.raw_string)
        if number is None and attr.raw is not None:
            number = attr.raw & 0xFF
        if number is None or not 0 < number < 150:
            return None
        return float(number), RAW
    if rule.unit == AVERAGE_IN_PARENS:
        found = re.fullmatch(r"\s*(\d+) \(Average (\d+)\)\s*", attr.raw_string or "")
        if found is None:
            return None
        highest, average = int(found.group(1)), int(found.group(2))
        if rule.meaning == ERASE_CEILING:
            return float(max(highest, average)), RAW
        if rule.meaning == ERASE_FLOOR:
            return float(min(highest, average)), RAW
        # An average above the maximum (seen on Phison OEM firmware) is not a reading.
        return (float(average), RAW) if average <= highest else None
    if rule.unit == COUNT_LOW16:
        words = re.fullmatch(r"\s*(\d+) (\d+) (\d+)\s*", attr.raw_string or "")
        if words:  # smartctl's raw16 rendering: high word first, so the low word is last
            return float(int(words.group(3))), RAW
        if attr.raw is None or attr.raw < 0:
            return None
        return float(attr.raw & 0xFFFF), RAW
    number = attr.normalized if rule.value == NORMALIZED else attr.raw
    if number is None or number < 0:
        return None
    if rule.unit == LBA:
        return float(number * sector_bytes), RAW
    if rule.unit in _BYTES_PER_UNIT:
        return float(number * _BYTES_PER_UNIT[rule.unit]), RAW
    return float(number), RAW


def interpret_attributes(
    attributes: Iterable[Attribute],
    model_family: Optional[str] = None,
    model_name: Optional[str] = None,
    logical_sector_bytes: Optional[int] = None,
    require_vouched: bool = True,
) -> AttributeFindings:
    """Apply :data:`ATTRIBUTE_TABLE` to one drive. Byte meanings come back in bytes,
    percentages as percent (0..100, life used may exceed 100), counts as counts.

    ``require_vouched``: generic rows read life and volume only off names the drive database
    vouches for (off for rotating drives, whose default names are the ones ATA's HDD vendors
    defined and still use: Seagate's 241/242 count sectors)."""
    drive = f"{model_family or ''} {model_name or ''}"
    sector_bytes = logical_sector_bytes or 512
    attrs: List[Attribute] = list(attributes)
    findings = AttributeFindings(attributes=tuple(attrs))
    # Walk the table in order so that its row order is the priority within a meaning.
    by_key: Dict[Tuple[int, str], List[Attribute]] = {}
    for attr in attrs:
        by_key.setdefault((attr.attr_id, attr.name), []).append(attr)
    for rule in ATTRIBUTE_TABLE:
        if rule.meaning in findings.withheld:
            continue
        if rule.meaning in findings.by_meaning and rule.meaning not in LIFE_MEANINGS:
            continue
        for attr in by_key.get((rule.attr_id, rule.name), ()):
            if not rule.matches(attr.attr_id, attr.name, drive):
                continue
            if require_vouched and rule.family is None and rule.meaning in NEEDS_VOUCHED_NAME and not attr.vouched:
                findings.unvouched.setdefault(rule.meaning, attr)
                continue
            if rule.unit == UNKNOWN:
                findings.withheld[rule.meaning] = f"ata {attr.attr_id} {attr.name}: unit unknown on this model"
                break
            read = _read(rule, attr, sector_bytes)
            if read is None:
                if rule.meaning in (LIFE_LEFT, LIFE_USED):
                    findings.invalid_life.append(attr)
                continue
            value, column = read
            found = Finding(rule.meaning, value, rule, attr, column)
            first = findings.by_meaning.get(rule.meaning)
            if first is None:
                findings.by_meaning[rule.meaning] = found
            elif first.attribute.attr_id != attr.attr_id:
                findings.also.append(found)  # a second life figure, to compare with the first
            break
    return findings
