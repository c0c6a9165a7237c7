"""collectors.diskstats against real /proc/diskstats captures.

Expected values were read off the fixture lines by hand; sectors are written as "N * 512" and
times in milliseconds as "N / 1000" so each number can be checked against the raw line.
"""

from __future__ import annotations

import shutil

import pytest

from collectors.diskstats import (
    DiskstatsReader,
    DiskstatsReading,
    LineError,
    drive_device_for,
    fold_by_drive,
    parse_diskstats,
    parse_diskstats_snapshots,
    whole_disks,
)
from collectors.model import IoStats, ParseError
from tests.conftest import fixture_path, read_fixture

JC = "iostat/proc-diskstats/jc__linux-proc_diskstats.txt"  # MIT, kernel 5.5+ (20 fields)
PROCFS = "iostat/proc-diskstats/procfs__fixtures_proc_diskstats.txt"  # Apache-2.0, 14/18/20 mixed
# GPL-2.0 percona files, kept because nothing else shows the case: pt-stalk "TS" lines, 7-field
# partition lines of kernels < 2.6.25 (small.txt), cciss/ names with a slash (diskstats-001).
PT_SMALL = "iostat/proc-diskstats/percona-toolkit__pt-diskstats_small.txt"
PT_CCISS = "iostat/proc-diskstats/percona-toolkit__pt-diskstats_diskstats-001.txt"
# GPL-2.0-or-later, sysstat's test trees: 18-field lines (4.18 discards), one 20-field line
# (root3 sdc), and the 17-field "sds" line no mainline kernel prints (see the module doc).
SYSSTAT = [f"iostat/proc-diskstats/sysstat__root{n}_proc_diskstats.txt" for n in (1, 2, 3)]
SYSFS = "write-cache/sysfs"


def text(relative: str) -> str:
    return read_fixture(relative).decode("ascii")


# (fixture, device, expected) -- one line of each layout, read by hand.
REAL_LINES = [
    # "8 0 sda 14200 3361 892828 5058 18736 13416 715384 12604 0 24940 17663 0 0 0 0 0 0"
    (
        JC,
        "sda",
        IoStats(
            reads_completed=14200,
            reads_merged=3361,
            read_bytes=892828 * 512,
            read_time_seconds=5058 / 1000,
            writes_completed=18736,
            writes_merged=13416,
            written_bytes=715384 * 512,
            write_time_seconds=12604 / 1000,
            in_flight=0,
            io_time_seconds=24940 / 1000,
            weighted_io_time_seconds=17663 / 1000,
            discards_completed=0,
            discarded_bytes=0,
            discard_time_seconds=0.0,
            flushes_completed=0,
            flush_time_seconds=0.0,
        ),
    ),
    # 14 fields: "259 0 nvme0n1 47114 4 4643973 21650 1078320 43950 39451633 1011053 0 222766 1032546"
    (
        PROCFS,
        "nvme0n1",
        IoStats(
            reads_completed=47114,
            reads_merged=4,
            read_bytes=4643973 * 512,
            read_time_seconds=21650 / 1000,
            writes_completed=1078320,
            writes_merged=43950,
            written_bytes=39451633 * 512,
            write_time_seconds=1011053 / 1000,
            in_flight=0,
            io_time_seconds=222766 / 1000,
            weighted_io_time_seconds=1032546 / 1000,
        ),
    ),
    # 18 fields (4.18 discards):
    # "8 0 sdb 326552 841 9657779 84 41822 2895 1972905 5007 0 60730 67070 68851 0 1925173784 11130"
    (
        PROCFS,
        "sdb",
        IoStats(
            reads_completed=326552,
            reads_merged=841,
            read_bytes=9657779 * 512,
            read_time_seconds=84 / 1000,
            writes_completed=41822,
            writes_merged=2895,
            written_bytes=1972905 * 512,
            write_time_seconds=5007 / 1000,
            in_flight=0,
            io_time_seconds=60730 / 1000,
            weighted_io_time_seconds=67070 / 1000,
            discards_completed=68851,
            discarded_bytes=1925173784 * 512,
            discard_time_seconds=11130 / 1000,
        ),
    ),
    # 20 fields (5.5 flushes):
    # "8 0 sdc 14202 71 579164 21861 2995 1589 180500 40875 0 11628 55200 0 0 0 0 127 182"
    (
        PROCFS,
        "sdc",
        IoStats(
            reads_completed=14202,
            reads_merged=71,
            read_bytes=579164 * 512,
            read_time_seconds=21861 / 1000,
            writes_completed=2995,
            writes_merged=1589,
            written_bytes=180500 * 512,
            write_time_seconds=40875 / 1000,
            in_flight=0,
            io_time_seconds=11628 / 1000,
            weighted_io_time_seconds=55200 / 1000,
            discards_completed=0,
            discarded_bytes=0,
            discard_time_seconds=0.0,
            flushes_completed=127,
            flush_time_seconds=182 / 1000,
        ),
    ),
    # device-mapper line with large counters:
    # "252 0 dm-0 59910002 0 1003337218 46229572 39231014 0 505696880 1158557800 0 11325968 1206301256"
    (
        PROCFS,
        "dm-0",
        IoStats(
            reads_completed=59910002,
            reads_merged=0,
            read_bytes=1003337218 * 512,
            read_time_seconds=46229572 / 1000,
            writes_completed=39231014,
            writes_merged=0,
            written_bytes=505696880 * 512,
            write_time_seconds=1158557800 / 1000,
            in_flight=0,
            io_time_seconds=11325968 / 1000,
            weighted_io_time_seconds=1206301256 / 1000,
        ),
    ),
    # 18 fields with non-zero discards (sysstat root1):
    # "65 0 sdq 49401 2722 3195008 622070 0 0 0 0 0 32562 714008 8638 547 362610 123000"
    (
        SYSSTAT[0],
        "sdq",
        IoStats(
            reads_completed=49401,
            reads_merged=2722,
            read_bytes=3195008 * 512,
            read_time_seconds=622070 / 1000,
            writes_completed=0,
            writes_merged=0,
            written_bytes=0,
            write_time_seconds=0.0,
            in_flight=0,
            io_time_seconds=32562 / 1000,
            weighted_io_time_seconds=714008 / 1000,
            discards_completed=8638,
            discarded_bytes=362610 * 512,
            discard_time_seconds=123000 / 1000,
        ),
    ),
]

# 17 fields, the 11 classic counters and a partial discard group of three zeros, read as 14:
# root1 "65 32 sds 386 416 8554 100 727 820 8746 3902 0 762 7902 0 0 0"
# root2 "65 32 sds 486 516 9554 800 827 920 8946 4902 0 862 9002 0 0 0"
# root3 "65 32 sds 555 599 9594 890 897 990 9096 5002 0 962 10002 0 0 0"
SDS_17 = [
    (SYSSTAT[0], (386, 416, 8554, 100, 727, 820, 8746, 3902, 0, 762, 7902)),
    (SYSSTAT[1], (486, 516, 9554, 800, 827, 920, 8946, 4902, 0, 862, 9002)),
    (SYSSTAT[2], (555, 599, 9594, 890, 897, 990, 9096, 5002, 0, 962, 10002)),
]


def _classic(v):
    return IoStats(
        reads_completed=v[0],
        reads_merged=v[1],
        read_bytes=v[2] * 512,
        read_time_seconds=v[3] / 1000,
        writes_completed=v[4],
        writes_merged=v[5],
        written_bytes=v[6] * 512,
        write_time_seconds=v[7] / 1000,
        in_flight=v[8],
        io_time_seconds=v[9] / 1000,
        weighted_io_time_seconds=v[10] / 1000,
    )


@pytest.mark.parametrize("relative,device,expected", REAL_LINES, ids=lambda v: v if isinstance(v, str) else "")
def test_real_line_values(relative, device, expected):
    stats = parse_diskstats(text(relative))
    # same division as the parser, so exact equality holds for the float fields too
    assert stats[device] == expected


@pytest.mark.parametrize(
    "relative,count,with_discards,with_flushes",
    [
        (JC, 15, 15, 15),
        # procfs mixes layouts: only sdb* carry 18 fields, only sdc* 20.
        (PROCFS, 52, {"sdb", "sdb1", "sdb2", "sdc", "sdc1", "sdc2"}, {"sdc", "sdc1", "sdc2"}),
    ],
)
def test_field_layouts_per_line(relative, count, with_discards, with_flushes):
    stats = parse_diskstats(text(relative))
    assert len(stats) == count
    discards = {name for name, s in stats.items() if s.discards_completed is not None}
    flushes = {name for name, s in stats.items() if s.flushes_completed is not None}
    if isinstance(with_discards, int):
        assert len(discards) == with_discards and len(flushes) == with_flushes
    else:
        assert discards == with_discards
        assert flushes == with_flushes


@pytest.mark.parametrize("relative,counters", SDS_17, ids=["root1", "root2", "root3"])
def test_sysstat_17_field_line_reads_as_the_classic_counters(relative, counters):
    stats = parse_diskstats(text(relative))
    assert stats.errors == ()
    # no discard fields from a partial group: absent, not zero
    assert stats["sds"] == _classic(counters)
    assert stats["sds"].discards_completed is None


@pytest.mark.parametrize(
    "relative,lines,disks",
    [
        # sda + sda1..12, sr0, sdb..sde, sdq, sdr, sds, dm-2
        (SYSSTAT[0], 22, ["sda", "sdb", "sdc", "sdd", "sde", "sdq", "sdr", "sds"]),
        (SYSSTAT[1], 21, ["sda", "sdb", "sdc", "sdd", "sde", "sdq", "sdr", "sds"]),
        (SYSSTAT[2], 21, ["sda", "sdb", "sdc", "sdd", "sde", "sdq", "sdr", "sds"]),
    ],
)
def test_sysstat_files_keep_every_disk(relative, lines, disks):
    stats = parse_diskstats(text(relative))
    assert len(stats) == lines and stats.errors == ()
    assert sorted(whole_disks(stats)) == disks
    # the other disks are read in full next to the 17-field line: root1 "8 0 sda 49601 ..."
    assert stats["sda"].reads_completed == (49701 if relative == SYSSTAT[2] else 49601)


def test_sysstat_root3_20_field_line():
    # "8 32 sdc 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 32 2145"
    sdc = parse_diskstats(text(SYSSTAT[2]))["sdc"]
    assert sdc.flushes_completed == 32 and sdc.flush_time_seconds == 2145 / 1000
    assert sdc.discards_completed == 0


def test_sector_is_512_bytes_and_ms_become_seconds():
    sda = parse_diskstats(text(JC))["sda"]
    # 715384 sectors written: 366,276,608 bytes; 12604 ms writing: 12.604 s.
    assert sda.written_bytes == 366_276_608
    assert sda.write_time_seconds == pytest.approx(12.604)


def test_percona_snapshots_with_ts_lines_and_old_partition_lines():
    snapshots = parse_diskstats_snapshots(text(PT_SMALL))
    assert len(snapshots) == 11
    assert [ts for ts, _ in snapshots[:3]] == [1327510177.628, 1327510178.635, 1327510179.669]
    assert snapshots[-1][0] == pytest.approx(1327510186.999984)
    first = snapshots[0][1]
    # 16 ram, sda, sdb, fd0, md0, dm-0, dm-1; the 7-field sda1..sda5/sdb1 lines are left out.
    assert len(first) == 22
    assert not {"sda1", "sda2", "sda3", "sda4", "sda5", "sdb1"} & set(first)
    # "8 0 sda 85958345 9208182 2671393219 2437232103 534745383 846485907 11060948316 ..."
    assert first["sda"].reads_completed == 85958345
    assert first["sda"].read_bytes == 2671393219 * 512
    assert first["sda"].written_bytes == 11060948316 * 512
    # one second later: "... 534745448 846485919 11060948932 2055733196 0 545004122 197929059"
    second = snapshots[1][1]
    assert second["sda"].writes_completed - first["sda"].writes_completed == 534745448 - 534745383
    assert whole_disks(first) == {"sda": first["sda"], "sdb": first["sdb"]}


def test_percona_cciss_names_and_bare_epoch_ts():
    snapshots = parse_diskstats_snapshots(text(PT_CCISS))
    assert [ts for ts, _ in snapshots] == [1281367519.0, 1281367521.0, 1281367523.0, 1281367524.0, 1281367526.0]
    first = snapshots[0][1]
    # "104 16 cciss/c0d1 1172444169 44249324 49905804480 3910112166 3461426338 29008876
    #  138140456491 445486927 19 164987623 60581634"
    c0d1 = first["cciss/c0d1"]
    assert c0d1.in_flight == 19
    assert c0d1.written_bytes == 138140456491 * 512
    assert sorted(whole_disks(first)) == ["cciss/c0d0", "cciss/c0d1", "cciss/c1d0"]


def test_plain_file_is_one_snapshot_without_time():
    plain = text(JC)
    assert parse_diskstats_snapshots(plain) == [(None, parse_diskstats(plain))]


def test_single_snapshot_parser_refuses_ts_lines():
    with pytest.raises(ParseError, match="line 1: timestamp line"):
        parse_diskstats(text(PT_SMALL))


SDA_14 = "   8       0 sda 1 2 3 4 5 6 7 8 0 10 11"
# Input with nothing usable: ParseError.
MALFORMED = {
    "empty": "",
    "blank lines": "\n  \n",
    "not enough fields": "   8       0 sda 1 2 3",
    "13 fields": "   8       0 sda 1 2 3 4 5 6 7 8 0 10",
    "non-numeric counter": "   8       0 sda 1 2 x 4 5 6 7 8 0 10 11",
    "negative counter": "   8       0 sda 1 2 -3 4 5 6 7 8 0 10 11",
    "fractional counter": "   8       0 sda 1 2 3.5 4 5 6 7 8 0 10 11",
    "non-numeric major": "   x       0 sda 1 2 3 4 5 6 7 8 0 10 11",
    "negative old partition": "   8       1 sda1 1 -2 3 4",
    "non-numeric field in a partial group": SDA_14 + " 12 x",
    "every line bad": "   8       0 sda 1 2 3\n   8      16 sdb 1 2 3",
}


@pytest.mark.parametrize("raw", MALFORMED.values(), ids=MALFORMED.keys())
def test_nothing_usable_raises_parse_error(raw):
    with pytest.raises(ParseError):
        parse_diskstats(raw)
    with pytest.raises(ParseError):
        parse_diskstats_snapshots(raw)


def test_parse_error_names_the_first_bad_line():
    with pytest.raises(ParseError, match=r"no usable diskstats line: line 1: 6 fields.*sda.*\(and 1 more bad lines\)"):
        parse_diskstats(MALFORMED["every line bad"])


SDB_14 = "   8      16 sdb 21 22 23 24 25 26 27 28 0 30 31"
# One bad line among good ones: the good lines are kept, the bad one is reported.
# (input, devices kept, [(line number, device, start of the reason)])
BAD_LINES = {
    "too few fields": (
        SDA_14 + "\n   8 1 sda1 1 2\n" + SDB_14,
        ["sda", "sdb"],
        [(2, "sda1", "5 fields, expected 7 or at least 14")],
    ),
    "13 fields": (SDA_14 + "\n   8 16 sdb 1 2 3 4 5 6 7 8 0 10", ["sda"], [(2, "sdb", "13 fields")]),
    "no name": (SDA_14 + "\n   8 16", ["sda"], [(2, None, "2 fields")]),
    "non-numeric counter": (
        "   8 0 sda 1 2 3 4 5 6 7 8 0 ten 11\n" + SDB_14,
        ["sdb"],
        [(1, "sda", "'ten' is not a non-negative integer")],
    ),
    "non-numeric field in a partial group": (
        SDA_14 + "\n" + SDB_14 + " 0 0 n/a",
        ["sda"],
        [(2, "sdb", "'n/a' is not a non-negative integer")],
    ),
    "device twice": (
        SDA_14 + "\n" + SDB_14 + "\n" + SDA_14,
        ["sda", "sdb"],
        [(3, "sda", "device 'sda' appears twice")],
    ),
    "two bad lines": (
        "   8 0 sda 1\n" + SDB_14 + "\n   8 32 sdc -1 2 3 4 5 6 7 8 0 10 11",
        ["sdb"],
        [(1, "sda", "4 fields"), (3, "sdc", "'-1' is not")],
    ),
}


@pytest.mark.parametrize("raw,kept,errors", BAD_LINES.values(), ids=BAD_LINES.keys())
def test_one_bad_line_does_not_cost_the_others(raw, kept, errors):
    stats = parse_diskstats(raw)
    assert sorted(stats) == kept
    assert [(e.lineno, e.device) for e in stats.errors] == [(n, d) for n, d, _ in errors]
    for error, (_, _, reason) in zip(stats.errors, errors):
        assert error.reason.startswith(reason), error
        assert raw.splitlines()[error.lineno - 1].strip() == error.line
    # the same lines after a TS line: the same answer, in that snapshot
    ((ts, snapshot),) = parse_diskstats_snapshots("TS 7\n" + raw)
    assert ts == 7.0 and sorted(snapshot) == kept
    assert [(e.lineno - 1, e.device) for e in snapshot.errors] == [(n, d) for n, d, _ in errors]


def test_first_of_two_lines_for_one_device_wins():
    stats = parse_diskstats(SDA_14 + "\n   8 0 sda 9 9 9 9 9 9 9 9 9 9 9")
    assert stats["sda"].reads_completed == 1


def test_a_real_file_with_one_broken_line_keeps_every_other_disk():
    lines = text(SYSSTAT[0]).splitlines()
    sds = next(i for i, line in enumerate(lines) if line.split()[2] == "sds")
    lines[sds] = "  65      32 sds 386 416 8554 100 727 820 8746"  # cut short: 10 fields
    stats = parse_diskstats("\n".join(lines) + "\n")
    assert "sds" not in stats and len(stats) == 21
    assert stats["sdr"].reads_completed == 16389  # "65 16 sdr 16389 11205 ..."
    assert stats.errors == (LineError(sds + 1, "sds", "10 fields, expected 7 or at least 14", lines[sds].strip()),)
    assert str(stats.errors[0]) == f"line {sds + 1}: 10 fields, expected 7 or at least 14: {lines[sds].strip()!r}"


def test_the_reason_is_the_same_on_the_next_read():
    # The poller logs a broken line once, keyed on (device, reason): counters must not be in it.
    first = parse_diskstats(SDA_14 + "\n   8 16 sdb 1 2 3 4 5 6 7 8 0 10").errors[0]
    later = parse_diskstats(SDA_14 + "\n   8 16 sdb 9 9 9 9 9 9 9 9 9 99").errors[0]
    assert (first.device, first.reason) == (later.device, later.reason)
    assert first.line != later.line


@pytest.mark.parametrize(
    "extra,discards",
    [
        (" 12", False),  # 15 fields
        (" 12 13", False),  # 16
        (" 12 13 14", False),  # 17
        (" 12 13 14 15", True),  # 18
        (" 12 13 14 15 16", True),  # 19: a partial flush group
    ],
)
def test_partial_groups_read_as_the_group_below(extra, discards):
    stats = parse_diskstats(SDA_14 + extra)
    assert stats.errors == ()
    sda = stats["sda"]
    assert sda.weighted_io_time_seconds == 11 / 1000
    assert (sda.discards_completed == 12) is discards
    assert (sda.discards_completed is None) is not discards
    assert sda.flushes_completed is None


def test_a_reading_compares_its_errors_too():
    clean = parse_diskstats(SDA_14)
    broken = parse_diskstats(SDA_14 + "\n   8 16 sdb 1")
    assert dict(clean) == dict(broken) and clean == dict(broken)
    assert clean != broken
    assert isinstance(broken, DiskstatsReading)


MALFORMED_SNAPSHOTS = {
    "TS without time": "TS\n" + SDA_14,
    "TS time not a number": "TS yesterday\n" + SDA_14,
    "TS time negative": "TS -5\n" + SDA_14,
    "TS time nan": "TS nan\n" + SDA_14,
    "only a bad line after TS": "TS 1\n   8 0 sda 1 2 3",
}


@pytest.mark.parametrize("raw", MALFORMED_SNAPSHOTS.values(), ids=MALFORMED_SNAPSHOTS.keys())
def test_malformed_snapshots_raise_parse_error(raw):
    with pytest.raises(ParseError):
        parse_diskstats_snapshots(raw)


def test_a_bad_line_in_one_snapshot_leaves_the_others_alone():
    snapshots = parse_diskstats_snapshots("TS 1\n" + SDA_14 + "\nTS 2\n   8 0 sda 1 2 3\n" + SDB_14)
    assert [sorted(s) for _, s in snapshots] == [["sda"], ["sdb"]]
    assert snapshots[0][1].errors == ()
    assert [(e.lineno, e.device) for e in snapshots[1][1].errors] == [(4, "sda")]


def test_same_device_in_two_snapshots_is_fine():
    snapshots = parse_diskstats_snapshots("TS 1\n" + SDA_14 + "\nTS 2\n" + SDA_14 + "\nTS 3\n")
    assert [ts for ts, _ in snapshots] == [1.0, 2.0, 3.0]
    assert snapshots[0][1] == snapshots[1][1]
    assert snapshots[2][1] == {}  # a TS line with nothing after it: an empty capture


def test_longer_lines_from_a_future_kernel_read_as_20_fields():
    line = "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19"
    sda = parse_diskstats(line)["sda"]
    assert sda.flushes_completed == 16 and sda.flush_time_seconds == pytest.approx(0.017)


# whole_disks -------------------------------------------------------------------------------


def _named(names):
    zero = parse_diskstats(SDA_14)["sda"]
    return {name: zero for name in names}


NAMES = [
    "sda", "sda1", "sdab", "sdab3", "hda", "hda2", "vda", "vda1", "xvda", "xvda1",
    "dfa", "dfa1", "dfb", "dfb12",  # Shannon Direct-IO cards and their partitions
    "nvme0n1", "nvme0n1p1", "nvme1n2", "nvme1n2p10",
    "mmcblk0", "mmcblk0p1", "cciss/c0d0", "cciss/c0d0p1", "emcpowera",
    "md0", "md127", "dm-0", "dm-12", "loop0", "loop0p1", "ram0", "zram0", "sr0", "fd0",
]  # fmt: skip
DISKS = ["sda", "sdab", "hda", "vda", "xvda", "dfa", "dfb", "nvme0n1", "nvme1n2", "mmcblk0", "cciss/c0d0", "emcpowera"]


def test_whole_disks_by_name():
    assert sorted(whole_disks(_named(NAMES))) == sorted(DISKS)


def test_whole_disks_include_dm_and_loop():
    assert sorted(whole_disks(_named(NAMES), include_dm=True)) == sorted(DISKS + ["dm-0", "dm-12"])
    assert sorted(whole_disks(_named(NAMES), include_loop=True)) == sorted(DISKS + ["loop0"])


def test_whole_disks_on_real_file_by_name():
    stats = parse_diskstats(text(PROCFS))
    disks = whole_disks(stats)
    assert sorted(disks) == ["mmcblk0", "nvme0n1", "sda", "sdb", "sdc", "vda"]
    assert disks["nvme0n1"] is stats["nvme0n1"]  # partitions dropped, never added to the disk


def test_whole_disks_by_sysfs_membership():
    stats = parse_diskstats(text(PROCFS))
    sysfs = str(fixture_path(SYSFS))
    # the fake tree has block/{sda,sdb,sdc,sdd,sde,nvme0n1,dfa}; vda and mmcblk0 are not there
    assert sorted(whole_disks(stats, sysfs_root=sysfs)) == ["nvme0n1", "sda", "sdb", "sdc"]


def test_whole_disks_sysfs_translates_slash(tmp_path):
    (tmp_path / "block" / "cciss!c0d1").mkdir(parents=True)
    first = parse_diskstats_snapshots(text(PT_CCISS))[0][1]
    assert list(whole_disks(first, sysfs_root=str(tmp_path))) == ["cciss/c0d1"]


def test_whole_disks_missing_sysfs_block_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        whole_disks(parse_diskstats(text(JC)), sysfs_root=str(tmp_path))


@pytest.mark.parametrize(
    "block_device,drive",
    [
        ("nvme0n1", "nvme0"),
        ("nvme1n2", "nvme1"),
        ("nvme0n1p3", "nvme0"),
        ("nvme2c1n1", "nvme2"),  # multipath path device
        ("dfa", "dfa"),
        ("dfa1", "dfa"),
        ("sda", "sda"),
        ("sdab12", "sdab"),
        ("mmcblk0p2", "mmcblk0"),
        ("cciss/c0d0p1", "cciss/c0d0"),
        ("md0", "md0"),
        ("dm-3", "dm-3"),
    ],
)
def test_drive_device_for(block_device, drive):
    assert drive_device_for(block_device) == drive


# fold_by_drive -----------------------------------------------------------------------------

# No public capture shows two namespaces on one controller, so nvme0n2 and nvme1n1 are written
# here next to the real nvme0n1 line of the procfs fixture (14 fields):
# "259 0 nvme0n1 47114 4 4643973 21650 1078320 43950 39451633 1011053 0 222766 1032546"
NVME0N2 = " 259       3 nvme0n2 100 0 800 50 2000 10 160000 900 2 300000 4000"
NVME1N1 = " 259       4 nvme1n1 7 0 56 3 9 0 72 4 1 5 6"


def test_fold_namespaces_into_their_controller():
    nvme0n1_line = next(line for line in text(PROCFS).splitlines() if line.split()[2] == "nvme0n1")
    p1_line = next(line for line in text(PROCFS).splitlines() if line.split()[2] == "nvme0n1p1")
    stats = parse_diskstats("\n".join([nvme0n1_line, p1_line, NVME0N2, NVME1N1]))
    folded = fold_by_drive(whole_disks(stats))  # the partition goes before folding
    assert sorted(folded) == ["nvme0", "nvme1"]
    assert folded["nvme1"] == stats["nvme1n1"]  # one namespace: unchanged
    nvme0 = folded["nvme0"]
    assert nvme0.reads_completed == 47114 + 100
    assert nvme0.read_bytes == (4643973 + 800) * 512
    assert nvme0.writes_completed == 1078320 + 2000
    assert nvme0.written_bytes == (39451633 + 160000) * 512
    assert nvme0.write_time_seconds == pytest.approx((1011053 + 900) / 1000)
    assert nvme0.weighted_io_time_seconds == pytest.approx((1032546 + 4000) / 1000)
    assert nvme0.in_flight == 0 + 2  # requests in flight add up
    # busy time is the larger namespace's, not the sum (see the next test)
    assert nvme0.io_time_seconds == 300000 / 1000
    assert nvme0.discards_completed is None  # 14-field lines: absent stays absent


def test_fold_keeps_busy_time_within_wall_time():
    # Two namespaces both busy for the whole 10 s between two pt-stalk snapshots: each line's
    # busy ms grows by 10000. Summed, the controller would be busy 20 s in 10 s (200%).
    raw = (
        "TS 1000.0\n"
        " 259 0 nvme0n1 10 0 80 5 10 0 80 5 1 50000 60000\n"
        " 259 1 nvme0n2 10 0 80 5 10 0 80 5 1 40000 60000\n"
        "TS 1010.0\n"
        " 259 0 nvme0n1 90 0 720 45 90 0 720 45 1 60000 80000\n"
        " 259 1 nvme0n2 90 0 720 45 90 0 720 45 1 50000 80000\n"
    )
    (t0, before), (t1, after) = parse_diskstats_snapshots(raw)
    wall = t1 - t0
    summed = sum(after[n].io_time_seconds - before[n].io_time_seconds for n in ("nvme0n1", "nvme0n2"))
    assert summed == pytest.approx(2 * wall)  # what a plain sum would export
    busy = fold_by_drive(after)["nvme0"].io_time_seconds - fold_by_drive(before)["nvme0"].io_time_seconds
    assert busy == pytest.approx(wall)
    assert busy / wall <= 1.0
    # the other counters are summed: 160 reads in the 10 s
    reads = fold_by_drive(after)["nvme0"].reads_completed - fold_by_drive(before)["nvme0"].reads_completed
    assert reads == 160


def test_fold_leaves_other_disks_alone():
    stats = parse_diskstats(text(PROCFS))
    disks = whole_disks(stats)
    folded = fold_by_drive(disks)
    assert sorted(folded) == ["mmcblk0", "nvme0", "sda", "sdb", "sdc", "vda"]
    assert folded["sdb"] == stats["sdb"] and folded["nvme0"] == stats["nvme0n1"]


# reader ------------------------------------------------------------------------------------


def _procfs(tmp_path, relative):
    shutil.copyfile(fixture_path(relative), tmp_path / "diskstats")
    return str(tmp_path)


def test_reader_reads_procfs_root(tmp_path):
    reader = DiskstatsReader(procfs_root=_procfs(tmp_path, PROCFS))
    assert reader.read() == parse_diskstats(text(PROCFS))


def test_reader_missing_file_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        DiskstatsReader(procfs_root=str(tmp_path)).read()


def test_reader_raises_when_nothing_is_usable(tmp_path):
    (tmp_path / "diskstats").write_text(MALFORMED["every line bad"] + "\n")
    with pytest.raises(ParseError):
        DiskstatsReader(procfs_root=str(tmp_path)).read()


def test_reader_reads_the_sysstat_file_with_its_17_field_line(tmp_path):
    got = DiskstatsReader(procfs_root=_procfs(tmp_path, SYSSTAT[0])).read()
    assert got.errors == () and len(got) == 22
    assert got["sds"] == _classic(SDS_17[0][1])


def test_reader_reports_bad_lines_and_keeps_the_rest(tmp_path):
    (tmp_path / "diskstats").write_text(SDA_14 + "\n   8 16 sdb 1 2 3\n")
    got = DiskstatsReader(procfs_root=str(tmp_path)).read()
    assert list(got) == ["sda"]
    assert [(e.lineno, e.device) for e in got.errors] == [(2, "sdb")]
    # what the poller does with it: whole_disks and the fold take the reading as a mapping
    assert list(fold_by_drive(whole_disks(got))) == ["sda"]
