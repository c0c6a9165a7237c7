#!/usr/bin/env python3
"""An ssdfleet plug-in (contract version 1, docs/plugins.md) for any vendor tool that prints
``key=value`` lines: one drive per blank-line-separated block, turned into drive records by a
mapping file that names, for each figure, the key it comes from and the unit the tool prints.

    keyvalue_to_ssdfleet.py --map MAP.json --file captured-output.txt
    keyvalue_to_ssdfleet.py --map MAP.json -- /usr/sbin/vendor-tool --all

The mapping (see shannon-p.map.json, written for ``shannon-status -p`` output)::

    {"tool": "shannon-status -p",
     "identity": {"serial": "serial_number", "model": "model", "firmware": "firmware_version"},
     "values": {"life_left_ratio": {"key": "estimated_life_left", "unit": "percent"},
                "host_written_bytes": {"key": "host_write_data", "unit": "GB"}},
     "temperatures": [{"sensor": "controller", "key": "controller_temp", "max_key": "controller_temp_max"}]}

Units: ``percent`` (``99%`` -> 0.99), ``ratio``, ``bytes``, ``GB``/``TB`` (10^9/10^12 bytes),
``GiB``/``TiB`` (2^30/2^40), ``count``, ``hours`` (-> seconds), ``degC``. A value whose text
does not carry the unit the mapping expects (``GB`` for GB, ``%`` for percent, ``degC``) is
withheld with the reason, never converted by guess. Standard library only; Python 3.6+.
"""

import argparse
import json
import re
import subprocess
import sys

SCALE = {"bytes": 1, "GB": 10**9, "TB": 10**12, "GiB": 2**30, "TiB": 2**40}
SUFFIX = {"percent": "%", "GB": "GB", "TB": "TB", "GiB": "GiB", "TiB": "TiB", "degC": "degC"}
INTEGER_FIELDS = {"capacity_bytes", "host_written_bytes", "host_read_bytes", "nand_written_bytes",
                  "power_on_seconds", "power_cycles", "media_errors"}


def blocks(text):
    block = {}
    for line in text.splitlines():
        if not line.strip():
            if block:
                yield block
                block = {}
            continue
        if "=" in line:
            key, _, value = line.partition("=")
            block[key.strip()] = value.strip()
    if block:
        yield block


def convert(text, unit):
    """(value, None) or (None, why)."""
    suffix = SUFFIX.get(unit)
    m = re.match(r"^(-?[0-9]+(?:\.[0-9]+)?)\s*(\S*)", text)
    if not m:
        return None, "not a number: %r" % text
    number, printed = float(m.group(1)), m.group(2)
    if suffix and printed != suffix:
        return None, "printed %r where the mapping expects %s" % (text, suffix)
    if unit == "percent":
        return number / 100, None
    if unit in ("ratio", "degC"):
        return number, None
    if unit in SCALE:
        return int(round(number * SCALE[unit])), None
    if unit == "count":
        return int(number), None
    if unit == "hours":
        return int(number * 3600), None
    return None, "unknown unit %r in the mapping" % unit


def drive(block, mapping):
    tool = mapping.get("tool", "vendor tool")
    out = {"sources": {}, "withheld": {}}
    for field, key in mapping.get("identity", {}).items():
        if block.get(key):
            out[field] = block[key]
    for field, rule in mapping.get("values", {}).items():
        text = block.get(rule["key"])
        if text is None:
            continue
        value, why = convert(text, rule["unit"])
        if why:
            out["withheld"][field] = "%s %s: %s" % (tool, rule["key"], why)
            continue
        out[field] = int(value) if field in INTEGER_FIELDS else value
        out["sources"][field] = "%s %s=%s" % (tool, rule["key"], text)
    temps = []
    for rule in mapping.get("temperatures", []):
        text = block.get(rule["key"])
        if text is None:
            continue
        value, why = convert(text, "degC")
        if why:
            continue
        t = {"sensor": rule["sensor"], "celsius": value}
        if rule.get("max_key") and block.get(rule["max_key"]):
            high, why = convert(block[rule["max_key"]], "degC")
            if not why:
                t["max_celsius"] = high
        temps.append(t)
    if temps:
        out["temperatures"] = temps
        out["sources"]["temperatures"] = "%s %s" % (tool, ", ".join(r["key"] for r in mapping["temperatures"]))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--map", required=True, help="mapping JSON file")
    p.add_argument("--file", help="read the tool's output from this file instead of running it")
    p.add_argument("command", nargs="*", help="the vendor tool's argv (after --)")
    args = p.parse_args(argv)
    with open(args.map) as fh:
        mapping = json.load(fh)
    if args.file:
        with open(args.file, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    elif args.command:
        done = subprocess.run(args.command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=60)
        if done.returncode != 0:
            sys.stderr.write("%s exited with %d\n" % (args.command[0], done.returncode))
            return 1
        text = done.stdout.decode("utf-8", "replace")
    else:
        p.error("give --file or a command")
    drives = [drive(b, mapping) for b in blocks(text)]
    drives = [d for d in drives if d.get("serial") or d.get("wwn")]
    json.dump({"ssdfleet_plugin": 1, "drives": drives}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
