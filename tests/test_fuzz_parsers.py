"""Property tests of every parser: no input makes one raise anything but its own error.

Two kinds of input per parser: arbitrary bytes or text, and real captures from tests/fixtures
mutated the way broken tools and broken pipes mangle output (byte flips, deleted, duplicated
and truncated lines, numbers replaced by huge, negative, fractional or non-numbers). The only
exception allowed out is the parser's documented one: ``ParseError`` (``NoSmartData`` is a
subclass) for the collectors, ``WebConfigError`` for the web config, ``ConfigError`` for the
agent configuration, ``Refused`` (or an error response) for the probe helper. Anything else
would be a crash in the poller's thread, a failed scrape or a dead helper connection.

Escapes these tests found are fixed; each keeps a reproducer at the end of the module. A new
one that cannot be fixed at once can be listed in KNOWN_ESCAPES (the fuzz run then counts it
instead of failing) with a strict-xfail reproducer.

The number of examples each parser saw is printed at the end of the module.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Sequence

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.config import ConfigError, load_config
from agent.privhelper import PROTOCOL_VERSION, HelperRunner, ProbeHelper, Refused, Validator
from agent.webconfig import WebConfigError, parse_web_config
from collectors import blockdev, diskstats, evidence, shannon, smartctl, write_cache
from collectors.fusionio import parse as fusionio_parse
from collectors.model import DriveReading, ParseError
from collectors.nvme_vendor import nvme_cli
from collectors.plugin.contract import parse_document
from collectors.runner import ToolResult
from collectors.smartctl import text_report as smartctl_text
from tests.bounds import reading_violations
from tests.conftest import FIXTURES, ROOT, fixture_files, read_fixture

# SSDFLEET_FUZZ_SCALE=10 runs ten times the examples (a longer hunt than the test suite's).
SCALE = float(os.environ.get("SSDFLEET_FUZZ_SCALE", "1"))
MUTATED = settings(max_examples=int(200 * SCALE), deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
ARBITRARY = settings(max_examples=int(100 * SCALE), deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# Parsers whose mutated input is slow to check by design get fewer examples: a web config's
# bcrypt hash is checked once at load, and a mutated cost digit ("04" -> "14", "16") makes that
# check take 1 to 5 s (95 s for 200 examples on the CI machine).
FEWER = {"webconfig.parse_web_config": 40}

EXAMPLES: Counter = Counter()

# (function name, exception type, message pattern): crashes these tests found in modules this
# suite does not own, reported and reproduced by the strict-xfail tests at the end.
KNOWN_ESCAPES: List = [
    # None today. The five these tests found (a PyYAML date ValueError, deep nesting, a config
    # that is not UTF-8, a timeout beyond float range, a non-string stdout in a helper answer)
    # are fixed; their reproducers below keep them fixed.
]


@pytest.fixture(scope="module", autouse=True)
def _report_counts(pytestconfig):
    yield
    lines = [f"  {name}: {count} examples" for name, count in sorted(EXAMPLES.items())]
    text = "\nparser fuzz examples run:\n" + "\n".join(lines) + f"\n  total: {sum(EXAMPLES.values())}"
    # Shown without -s: step outside pytest's output capture for this one report.
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        with capture.global_and_fixture_disabled():
            print(text)
    else:
        print(text)


def _files(folder: str, suffix: str = "") -> List[bytes]:
    return [p.read_bytes() for p in fixture_files(folder, suffix)]


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")  # as the poller decodes tool output


# ----------------------------------------------------------------------------- seeds

SMARTCTL_JSON = [d for d in _files("smartctl-json", ".json") if b'"devices"' not in d[:2000]]
SCAN_JSON = [read_fixture("fakehost/telegraf__testcases_scan_all.json")] + [
    d for d in _files("smartctl-json", ".json") if b'"devices"' in d
]
SMARTCTL_TEXT = _files("smartctl-text", ".txt")
SCAN_TEXT = [
    b"/dev/sda -d scsi # /dev/sda, SCSI device\n/dev/sdb -d sat # /dev/sdb [SAT], ATA device\n"
    b"/dev/nvme0 -d nvme # /dev/nvme0, NVMe device\n/dev/bus/0 -d megaraid,0 # /dev/bus/0 [megaraid_disk_00], SCSI device\n"
]
SHANNON_P = [read_fixture("shannon/seed000__status-p_scta_9h.txt"),
             read_fixture("shannon/constructed__status-p-a_gen2_two_cards.txt")]
SHANNON_A = [read_fixture("shannon/seed000__status-a_9h.txt"),
             read_fixture("shannon/seed000__status-a_21h_body.txt"),
             read_fixture("shannon/constructed__status-a_two_cards.txt")]
HDPARM = _files("write-cache/hdparm", ".out")
NVME_VWC = _files("write-cache/nvme")
SMARTCTL_WCACHE = _files("write-cache/smartctl", ".json")
SMARTCTL_WCACHE_TEXT = _files("write-cache/smartctl", ".txt")
SYSFS_WCACHE = [b"write back\n", b"write through\n", b"write back\n\n"]
SCSI_CACHE_TYPE = [read_fixture(p.relative_to(FIXTURES).as_posix())
                   for p in sorted((FIXTURES / "write-cache/sysfs").rglob("cache_type"))]
DISKSTATS = _files("iostat/proc-diskstats")
WEBCONFIG_DIR = FIXTURES / "webconfig"
WEBCONFIG = _files("webconfig", ".yml")
FIO_STATUS = [p.read_bytes() for p in fixture_files("fusionio", ".txt")]
PLUGIN_DOCS = [json.dumps({"ssdfleet_plugin": 1, "drives": [
    {"serial": "MB123", "life_left_ratio": 0.97, "host_written_bytes": 10**12, "sources": {
        "life_left_ratio": "memmonitor 'life: 97%'", "host_written_bytes": "memmonitor 'host write: 1 TB'"}},
    {"wwn": "5000c500a1b2c3d4", "temperatures": [{"sensor": "controller", "celsius": 55.0}],
     "sources": {"temperatures": "x"}, "withheld": {"nand_written_bytes": "not printed"}}]}).encode()]
NVME_SMART_LOG = [p.read_bytes() for p in fixture_files("nvme-cli") if "smart-log" in p.name]
NVME_LIST = [p.read_bytes() for p in fixture_files("nvme-cli") if "nvme-list" in p.name]
NVME_ID_CTRL = [p.read_bytes() for p in fixture_files("nvme-cli") if "IdentifyController" in p.name]
NVME_INTEL = [p.read_bytes() for p in fixture_files("nvme-cli") if "IntelInfoData" in p.name]
# smartctl --version, and the first lines of every text capture (banners from 5.0 to 7.5)
VERSIONS = [read_fixture("fakehost/smartctl-version.txt")] + [b"\n".join(d.split(b"\n")[:3]) for d in SMARTCTL_TEXT]
# The agent's configuration: the shipped example with every key, not a test fixture.
CONFIG_EXAMPLE = (ROOT / "deploy" / "config.example.yml").read_bytes()
CONFIG_YAML = [CONFIG_EXAMPLE, b"{}\n", b"intervals: {smartctl: 60}\nwrite_cache_rules:\n  - {model: '^INTEL', expected: disabled}\n"]


def _sysfs_tree(root: Path) -> Dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


SHANNON_SYSFS = [
    {rel.split("/", 1)[1]: text for rel, text in _sysfs_tree(d).items() if rel.startswith("shannon/")}
    for d in sorted((FIXTURES / "shannon/sysfs/class/block").iterdir())
]
for _d in sorted((FIXTURES / "shannon/sysfs/class/block").iterdir()):
    for _p in _d.rglob("*"):
        if _p.is_file():
            read_fixture(_p.relative_to(FIXTURES).as_posix())  # recorded as used
BLOCK_FILES = [
    {"size": "976773168\n", "queue/rotational": "0\n", "device/model": "Samsung SSD 860 EVO 500GB\n",
     "device/serial": "S3YZNB0KB00864E\n", "device/vendor": "ATA     \n", "device/wwid": "naa.5002538e40a0b51d\n",
     "device/rev": "RVT01B6Q\n", "removable": "0\n"},
    {"size": "2000409264\n", "queue/rotational": "0\n", "device/model": "INTEL SSDPEKNW010T8\n",
     "device/serial": "BTNH93710FS91P0B\n", "device/firmware_rev": "002C\n"},
]


# ----------------------------------------------------------------------------- mutations

_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?")
_REPLACEMENTS = [b"0", b"-1", b"-0", b"1.5", b"18446744073709551616", b"1e308", b"1e999", b"NaN",
                 b"99999999999999999999999999999999", b"0x1F", b"", b"--", b"\xff", b"1,000",
                 # all ones of 16, 32, 48 and 64 bits, INT64_MAX, a byte of 256 and 4096, 1e178 and
                 # 10**3239 (beyond float range), 5,000 digits (past Python 3.11's int() limit)
                 b"65535", b"4294967295", b"281474976710655", b"18446744073709551615", b"9223372036854775807",
                 b"256", b"4096", b"1e178", b"1" + b"0" * 178, b"1" + b"0" * 3239, b"9" * 5000]


@st.composite
def mutated(draw, seeds: Sequence[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(list(seeds))))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "delete_line", "dup_line", "truncate", "number", "number", "insert",
                                     "nest"]))
        if kind == "flip" and data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind in ("delete_line", "dup_line"):
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            if kind == "delete_line":
                del lines[i]
            else:
                lines.insert(i, lines[i])
            data = bytearray(b"\n".join(lines))
        elif kind == "truncate" and data:
            data = data[: draw(st.integers(0, len(data)))]
        elif kind == "number":
            found = list(_NUMBER.finditer(bytes(data)))
            if found:
                m = found[draw(st.integers(0, len(found) - 1))]
                new = draw(st.sampled_from(_REPLACEMENTS) | st.binary(max_size=6))
                data[m.start():m.end()] = new
        elif kind == "insert":
            i = draw(st.integers(0, len(data)))
            data[i:i] = draw(st.binary(max_size=16) | st.sampled_from([b"\n", b": ", b"=", b"\t", b"{", b"]"]))
        elif kind == "nest":  # deeper than the interpreter's recursion limit (1,000), or not;
            # 100,000 deep is in the reproducers below (PyYAML takes seconds to refuse it)
            depth = draw(st.sampled_from([10, 2000]))
            data = bytearray(draw(st.sampled_from([b"[", b'{"a":'])) * depth + data)
    return bytes(data)


_JSON_LEAF = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
              | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
JSON_VALUE = st.recursive(
    _JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _paths(doc: Any, prefix: tuple = ()) -> List[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, prefix + (i,))
    return out


@st.composite
def mutated_doc(draw, seeds: Sequence[bytes]) -> Any:
    """A real smartctl JSON document with values at random paths replaced by any JSON."""
    doc = json.loads(draw(st.sampled_from(list(seeds))))
    for _ in range(draw(st.integers(1, 5))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        new = draw(JSON_VALUE)
        if not path:
            doc = new
            continue
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        if draw(st.booleans()) and isinstance(parent, dict):
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = new
    return doc


@st.composite
def mutated_files(draw, seeds: Sequence[Mapping[str, str]]) -> Dict[str, str]:
    files = dict(draw(st.sampled_from(list(seeds))))
    for name in list(files):
        choice = draw(st.integers(0, 5))
        if choice == 0:
            del files[name]
        elif choice == 1:
            files[name] = _text(draw(mutated([files[name].encode()])))
        elif choice == 2:
            files[name] = draw(st.text(max_size=20))
    return files


# ----------------------------------------------------------------------------- the table

def _call_str(fn: Callable[[str], Any]) -> Callable[[bytes], Any]:
    return lambda data: fn(_text(data))


def _smart_log(data: bytes) -> Any:
    return nvme_cli.parse_smart_log_json(data, "/dev/nvme0")


def _id_ctrl(data: bytes) -> Any:
    # the identity helper runs on what the parser returns, as the poller uses them together
    return nvme_cli.id_ctrl_identity(nvme_cli.parse_id_ctrl_text(data))


def _intel_log(data: bytes) -> Any:
    return nvme_cli.intel_smart_fields(nvme_cli.parse_intel_smart_log_add(data))


def _versions(data: bytes) -> Any:
    # version parsers never raise: no banner is None / False
    text = _text(data)
    return (smartctl.smartctl_version(data), smartctl.smartctl_version(text), smartctl.supports_json(data),
            smartctl_text.smartctl_version(text))


PARSERS: Dict[str, tuple] = {
    # name: (function of bytes, seeds, allowed exception)
    "smartctl.parse_smartctl_json": (smartctl.parse_smartctl_json, SMARTCTL_JSON, ParseError),
    "smartctl.parse_scan_json": (smartctl.parse_scan_json, SCAN_JSON, ParseError),
    "smartctl.parse_scan_text": (smartctl.parse_scan_text, SCAN_TEXT, ParseError),
    "smartctl_text.parse_smartctl_text": (_call_str(smartctl_text.parse_smartctl_text), SMARTCTL_TEXT, ParseError),
    "smartctl_text.parse_smartctl_text_reading": (
        _call_str(smartctl_text.parse_smartctl_text_reading), SMARTCTL_TEXT, ParseError),
    "shannon.parse_status_p": (_call_str(shannon.parse_status_p), SHANNON_P, ParseError),
    "shannon.parse_status_a": (_call_str(shannon.parse_status_a), SHANNON_A, ParseError),
    "shannon.parse_card_list": (_call_str(shannon.parse_card_list), SHANNON_A, ParseError),
    "write_cache.parse_hdparm_w": (_call_str(write_cache.parse_hdparm_w), HDPARM, ParseError),
    "write_cache.parse_hdparm_w_multi": (_call_str(write_cache.parse_hdparm_w_multi), HDPARM, ParseError),
    "write_cache.parse_sysfs_write_cache": (_call_str(write_cache.parse_sysfs_write_cache), SYSFS_WCACHE, ParseError),
    "write_cache.parse_scsi_cache_type": (_call_str(write_cache.parse_scsi_cache_type), SCSI_CACHE_TYPE, ParseError),
    "write_cache.parse_nvme_feature_vwc": (_call_str(write_cache.parse_nvme_feature_vwc), NVME_VWC, ParseError),
    "write_cache.parse_smartctl_wcache_json": (write_cache.parse_smartctl_wcache_json, SMARTCTL_WCACHE, ParseError),
    "write_cache.parse_smartctl_wcache_text": (
        _call_str(write_cache.parse_smartctl_wcache_text), SMARTCTL_WCACHE_TEXT, ParseError),
    "diskstats.parse_diskstats": (_call_str(diskstats.parse_diskstats), DISKSTATS, ParseError),
    "diskstats.parse_diskstats_snapshots": (_call_str(diskstats.parse_diskstats_snapshots), DISKSTATS, ParseError),
    "webconfig.parse_web_config": (
        _call_str(lambda text: parse_web_config(text, str(WEBCONFIG_DIR))), WEBCONFIG, WebConfigError),
    "nvme_cli.parse_smart_log_json": (_smart_log, NVME_SMART_LOG, ParseError),
    "nvme_cli.parse_list_json": (nvme_cli.parse_list_json, NVME_LIST, ParseError),
    "nvme_cli.parse_id_ctrl_text+id_ctrl_identity": (_id_ctrl, NVME_ID_CTRL, ParseError),
    "nvme_cli.parse_intel_smart_log_add+intel_smart_fields": (_intel_log, NVME_INTEL, ParseError),
    "smartctl.smartctl_version+supports_json": (_versions, VERSIONS, ParseError),
    "fusionio.parse_status": (_call_str(fusionio_parse.parse_status), FIO_STATUS, ParseError),
    "plugin.parse_document": (lambda data: parse_document(data, "fuzz"), PLUGIN_DOCS, ParseError),
}


# Parsers whose readings their source passes through evidence.contain (the others call it
# themselves): their readings are checked after it.
_CONTAINED_BY_SOURCE = ("fusionio.", "plugin.")


def _within_bounds(name: str, result: Any) -> None:
    """Every reading a parser returns is within the bounds table (collectors/model.py)."""
    readings = result if isinstance(result, list) else [result]
    for reading in readings:
        if isinstance(reading, DriveReading):
            if name.startswith(_CONTAINED_BY_SOURCE):
                reading = evidence.contain(reading)
            assert reading_violations(reading) == [], (name, reading_violations(reading))


def _check(name: str, fn: Callable[[Any], Any], data: Any, allowed: type) -> Any:
    EXAMPLES[name] += 1
    try:
        result = fn(data)
        _within_bounds(name, result)
        return result
    except allowed:
        return None  # the parser's own, clear refusal
    except Exception as exc:
        for known_name, known_type, pattern in KNOWN_ESCAPES:
            if name == known_name and isinstance(exc, known_type) and re.search(pattern, str(exc)):
                EXAMPLES[f"{name} (known escape: {known_type.__name__})"] += 1
                return None
        raise


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_mutated_real_input(name):
    fn, seeds, allowed = PARSERS[name]
    assert seeds, f"no fixture seeds for {name}"

    @settings(MUTATED, max_examples=int(FEWER.get(name, 200) * SCALE))
    @given(data=mutated(seeds))
    def run(data: bytes) -> None:
        _check(name, fn, data, allowed)

    run()


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_arbitrary_input(name):
    fn, _, allowed = PARSERS[name]

    @ARBITRARY
    @given(data=st.binary(max_size=2000) | st.text(max_size=400).map(str.encode))
    def run(data: bytes) -> None:
        _check(name, fn, data, allowed)

    run()


def _finite(reading: Any) -> None:
    """JSON NaN or Infinity anywhere in the input must never reach the record."""
    if reading is None:
        return
    numbers = [getattr(reading, f) for f in ("life_left_ratio", "spare_left_ratio", "spare_threshold_ratio",
                                             "bad_block_ratio", "write_amplification")]
    numbers += [v for t in reading.temperatures for v in (t.celsius, t.max_celsius, t.limit_celsius)]
    for value in numbers:
        assert value is None or math.isfinite(value), reading
    for ratio in ("life_left_ratio", "spare_left_ratio", "spare_threshold_ratio"):
        value = getattr(reading, ratio)
        assert value is None or 0.0 <= value <= 1.0, (ratio, value)


@MUTATED
@given(doc=mutated_doc(SMARTCTL_JSON))
def test_normalise_smartctl_structurally_mutated(doc):
    _finite(_check("smartctl.normalise_smartctl", smartctl.normalise_smartctl, doc, ParseError))
    # The same document through the JSON entry point, as the poller calls it.
    _finite(_check("smartctl.parse_smartctl_json(doc)", smartctl.parse_smartctl_json,
                   json.dumps(doc, allow_nan=True), ParseError))


@ARBITRARY
@given(doc=JSON_VALUE)
def test_normalise_smartctl_arbitrary_json(doc):
    if isinstance(doc, dict):
        _check("smartctl.normalise_smartctl", smartctl.normalise_smartctl, doc, ParseError)
    _check("smartctl.parse_smartctl_json(doc)", smartctl.parse_smartctl_json, json.dumps(doc), ParseError)


@MUTATED
@given(doc=mutated_doc(SMARTCTL_WCACHE))
def test_smartctl_wcache_mapping_mutated(doc):
    if isinstance(doc, dict):
        _check("write_cache.parse_smartctl_wcache_json(mapping)", write_cache.parse_smartctl_wcache_json,
               doc, ParseError)


@MUTATED
@given(files=mutated_files(SHANNON_SYSFS), name=st.sampled_from(["dfa", "dfb"]) | st.text(max_size=6))
def test_shannon_sysfs_mutated(files, name):
    _check("shannon.parse_sysfs", lambda f: shannon.parse_sysfs(f, name), files, ParseError)


@MUTATED
@given(files=mutated_files(BLOCK_FILES), name=st.sampled_from(["sda", "nvme0n1", "dfa"]) | st.text(max_size=6))
def test_block_device_mutated(files, name):
    _check("blockdev.parse_block_device", lambda f: blockdev.parse_block_device(name, f), files, ParseError)


@ARBITRARY
@given(files=st.dictionaries(st.sampled_from(["size", "queue/rotational", "device/model", "device/serial",
                                              "device/wwid", "removable", "serial_number",
                                              "estimated_life_left", "temperature_int", "access_mode",
                                              "host_write_sectors", "overprovision"]),
                             st.text(max_size=30), max_size=8))
def test_sysfs_parsers_arbitrary_files(files):
    _check("blockdev.parse_block_device", lambda f: blockdev.parse_block_device("sda", f), files, ParseError)
    _check("shannon.parse_sysfs", lambda f: shannon.parse_sysfs(f, "dfa"), files, ParseError)


# ----------------------------------------------------------------------------- nvme-cli documents

@MUTATED
@given(doc=mutated_doc(NVME_SMART_LOG))
def test_nvme_smart_log_doc_structurally_mutated(doc):
    _check("nvme_cli.smart_log_doc", lambda d: nvme_cli.smart_log_doc(d, "/dev/nvme0"), doc, ParseError)
    _finite(_check("nvme_cli.parse_smart_log_json", _smart_log, json.dumps(doc, allow_nan=True).encode(),
                   ParseError))


@MUTATED
@given(doc=mutated_doc(NVME_LIST))
def test_nvme_list_structurally_mutated(doc):
    _check("nvme_cli.parse_list_json", nvme_cli.parse_list_json, json.dumps(doc, allow_nan=True), ParseError)


@ARBITRARY
@given(value=st.integers(-(2**70), 2**70) | JSON_VALUE)
def test_decode_critical_warning_any_value(value):
    _check("nvme_cli.decode_critical_warning", nvme_cli.decode_critical_warning, value, ParseError)


# ----------------------------------------------------------------------------- agent configuration

def _config_from_file(directory: Path) -> Callable[[bytes], Any]:
    path = directory / "config.yml"

    def load(data: bytes) -> Any:
        path.write_bytes(data)
        return load_config(str(path))

    return load


@st.composite
def yaml_docs(draw) -> bytes:
    """The example configuration with values at random paths replaced by any YAML value."""
    doc = draw(mutated_doc([json.dumps(yaml.safe_load(CONFIG_EXAMPLE)).encode()]))
    return yaml.safe_dump(doc, allow_unicode=True).encode("utf-8")


def test_load_config_mutated_yaml(tmp_path):
    load = _config_from_file(tmp_path)

    @MUTATED
    @given(data=mutated(CONFIG_YAML) | yaml_docs())
    def run(data: bytes) -> None:
        _check("config.load_config", load, data, ConfigError)

    run()


def test_load_config_arbitrary_text(tmp_path):
    load = _config_from_file(tmp_path)

    @ARBITRARY
    @given(data=st.text(max_size=400).map(lambda t: t.encode("utf-8")) | st.binary(max_size=400))
    def run(data: bytes) -> None:
        _check("config.load_config", load, data, ConfigError)

    run()


# ----------------------------------------------------------------------------- probe helper

def _helper(tmp_path: Path) -> ProbeHelper:
    """A helper whose dev root holds links to /dev/null (a character device) for the names
    the requests use; its runner returns a canned result instead of starting a tool."""
    dev = tmp_path / "dev"
    (dev / "cciss").mkdir(parents=True)
    for name in ("sda", "sdb", "nvme0", "scta", "megaraid_sas_ioctl_node", "cciss/c0d0", "twa0"):
        (dev / name).symlink_to("/dev/null")
    config = load_config(None, {"paths": {"dev": str(dev)}})

    def runner(argv, timeout=None, **_: Any) -> ToolResult:
        return ToolResult(tuple(argv), 0, b"{}", b"", 0.01)

    return ProbeHelper(config, runner=runner)


def _requests(dev: str) -> List[bytes]:
    """Requests as the agent sends them (argv built by the probes' own builders). The helper
    checks "/dev/NAME" against its configured dev root."""
    probe = smartctl.SmartctlProbe()
    argvs = [probe.read_argv(f"{dev}/sda", "sat"), probe.read_argv(f"{dev}/nvme0", "nvme"),
             probe.read_argv(f"{dev}/bus/0", "megaraid,3"), probe.read_argv(f"{dev}/cciss/c0d0", "cciss,1"),
             ["smartctl", "--scan-open", "--json=c"], ["smartctl", "--version"], ["shannon-status", "-a"],
             ["shannon-status", "-p", f"{dev}/scta"], ["hdparm", "-W", f"{dev}/sda"]]
    return [json.dumps({"version": PROTOCOL_VERSION, "argv": argv, "timeout": 30.0, "grace": 2.0,
                        "max_output": 8388608}).encode() for argv in argvs]


def _answered(helper: ProbeHelper) -> Callable[[bytes], Any]:
    def handle(raw: bytes) -> Any:
        answer = json.loads(helper.handle(raw, "fuzz"))  # always one JSON object back
        assert isinstance(answer, dict) and answer["version"] == PROTOCOL_VERSION
        assert answer["error"] is None or isinstance(answer["error"], str)
        return answer

    return handle


def test_probe_helper_requests(tmp_path):
    helper = _helper(tmp_path)
    handle = _answered(helper)
    seeds = _requests("/dev")
    # the seeds themselves are accepted and "run": the mutations start from real requests
    assert all(_check("privhelper.ProbeHelper.handle", handle, seed, Refused)["error"] is None for seed in seeds)

    @MUTATED
    @given(data=mutated(seeds) | mutated_doc(seeds).map(lambda d: json.dumps(d, allow_nan=True).encode()))
    def run(data: bytes) -> None:
        _check("privhelper.ProbeHelper.handle", handle, data, Refused)

    run()

    @ARBITRARY
    @given(data=st.binary(max_size=600) | st.text(max_size=300).map(str.encode))
    def arbitrary(data: bytes) -> None:
        _check("privhelper.ProbeHelper.handle", handle, data, Refused)

    arbitrary()


def test_probe_helper_argv_validation(tmp_path):
    helper = _helper(tmp_path)
    seeds = [json.loads(r)["argv"] for r in _requests("/dev")]
    validator: Validator = helper.validator

    @MUTATED
    @given(argv=st.sampled_from(seeds).flatmap(
        lambda argv: st.lists(st.sampled_from(argv) | st.text(max_size=40), max_size=len(argv) + 2)) | JSON_VALUE)
    def run(argv: Any) -> None:
        _check("privhelper.Validator.check", validator.check, argv, Refused)

    run()


ANSWERS = [json.dumps({"version": 1, "exit_code": 0, "stdout": "e30=", "stderr": "", "duration": 0.2,
                       "timed_out": False, "stuck": False, "truncated": False, "error": None}).encode(),
           json.dumps({"version": 1, "exit_code": None, "stdout": "", "stderr": "", "duration": 0.0,
                       "error": "probe helper refused: unknown tool 'rm'"}).encode()]


@MUTATED
@given(data=mutated(ANSWERS) | mutated_doc(ANSWERS).map(lambda d: json.dumps(d, allow_nan=True).encode()))
def test_helper_answer_decoding(data):
    def decode(raw: bytes) -> Any:
        result = HelperRunner._result(("smartctl",), raw, 0.0, lambda why: ToolResult(("smartctl",), None, b"", b"",
                                                                                       0.0, error=why))
        assert isinstance(result, ToolResult)
        return result

    _check("privhelper.HelperRunner._result", decode, data, ())


# ----------------------------------------------------------------------------- reproducers

def _config_text(tmp_path: Path, data: bytes) -> None:
    _config_from_file(tmp_path)(data)


def test_fixed_escape_config_bad_date(tmp_path):
    with pytest.raises(ConfigError):
        _config_text(tmp_path, b"state_dir: 2001-13-45\n")


def test_fixed_escape_config_deep_nesting(tmp_path):
    with pytest.raises(ConfigError):
        _config_text(tmp_path, b"[" * 5000)


def test_fixed_escape_config_not_utf8(tmp_path):
    with pytest.raises(ConfigError):
        _config_text(tmp_path, b"listen_address: \xff\n")


def test_fixed_escape_helper_huge_timeout(tmp_path):
    request = json.loads(_requests("/dev")[0])
    request["timeout"] = 10**400
    answer = json.loads(_helper(tmp_path).handle(json.dumps(request).encode(), "test"))
    assert "timeout" in answer["error"]


def test_fixed_escape_helper_answer_stdout_not_a_string():
    result = HelperRunner._result(("smartctl",), b'{"version": 1, "stdout": 5}', 0.0,
                                  lambda why: ToolResult(("smartctl",), None, b"", b"", 0.0, error=why))
    assert result.error and "unreadable answer" in result.error


# Issue 26: integers Python cannot convert and nesting deeper than the recursion limit escaped
# 19 parser entry points as ValueError, OverflowError or RecursionError (a traceback every poll;
# for fio-status, every card lost). One reproducer per kind; each must now be a ParseError.

_HUGE = "9" * 5000  # over Python 3.11's 4,300-digit int() limit


@pytest.mark.parametrize("name,call", [
    ("smartctl text banner", lambda: smartctl_text.parse_smartctl_text_reading(
        read_fixture("fakehost/smartctl-version.txt").decode().replace("7.", _HUGE + ".", 1) + "\n")),
    ("smartctl JSON nested", lambda: smartctl.parse_smartctl_json(b"[" * 100_000)),
    ("smartctl scan JSON nested", lambda: smartctl.parse_scan_json(b'{"a":' * 100_000)),
    ("smartctl JSON 5,000 digits", lambda: smartctl.parse_smartctl_json(
        read_fixture("fakehost/scrutiny__smart-nvme.json").replace(b'"media_errors": 0', f'"media_errors": {_HUGE}'.encode()))),
    ("shannon -a 5,000 digits", lambda: shannon.parse_status_a(
        read_fixture("shannon/seed000__status-a_9h.txt").decode().replace("Power cycles: 3", f"Power cycles: {_HUGE}"))),
    ("fio-status 5,000 digits", lambda: fusionio_parse.parse_status(
        read_fixture("fusionio/remixvsl__iodrive2-1t2_vsl3.2.16.txt").decode().replace("2353515625", _HUGE))),
    ("nvme smart-log nested", lambda: nvme_cli.parse_smart_log_json(b"[" * 100_000, "/dev/nvme0")),
    ("hdparm 5,000 digits", lambda: write_cache.parse_hdparm_w(f"\n/dev/sda:\n write-caching = {_HUGE} (on)\n")),
    ("diskstats 5,000 digits", lambda: diskstats.parse_diskstats(f"   8       0 sda {_HUGE} 0 0 0 0 0 0 0 0 0 0\n")),
    ("webconfig nested", lambda: parse_web_config("[" * 5000, str(WEBCONFIG_DIR))),
])
def test_fixed_escape_huge_integers_and_deep_nesting(name, call):
    with pytest.raises((ParseError, WebConfigError)):
        call()


def test_fixed_escape_integers_beyond_float_range_are_withheld_not_raised():
    """10**3239 where a float is compared (a temperature, an ATA raw value, a capacity) is an
    impossible value, withheld with its reason; the rest of the report is read."""
    doc = json.loads(read_fixture("fakehost/scrutiny__smart-ata-full.json"))
    doc["temperature"] = {"current": 10**3239}
    doc["user_capacity"] = {"bytes": 10**3239}
    for row in doc["ata_smart_attributes"]["table"]:
        if row["id"] == 5:
            row["raw"]["value"] = 10**3239
    reading = smartctl.normalise_smartctl(doc, "/dev/sda")
    assert reading.capacity_bytes is None and "capacity_bytes_withheld" in reading.extra
    assert "reallocated" not in reading.defects  # the drive temperature falls back to attribute 194
    assert reading.power_on_seconds and reading.host_written_bytes and reading_violations(reading) == []
