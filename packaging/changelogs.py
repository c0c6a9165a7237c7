#!/usr/bin/env python3
"""The packages' changelogs from CHANGELOG.md (run by packaging/build.sh).

    changelogs.py CHANGELOG.md MAINTAINER --rpm changelog.yml --deb changelog.Debian

CHANGELOG.md has "## VERSION - DATE" headings and "- " items. The .rpm's %changelog is made by
nfpm from chglog YAML (--rpm; JSON is YAML). The .deb's changelog.Debian is written here
(--deb) in the format dpkg-parsechangelog reads, each item wrapped at 80 columns as lintian
asks: nfpm's own would keep every item on one line.
"""

from __future__ import annotations

import argparse
import email.utils
import json
import re
import sys
import textwrap
from datetime import datetime, timezone
from typing import Dict, List


def entries(text: str) -> List[Dict]:
    out = []
    for head, body in re.findall(r"^## (\S+ - \S+)\n(.*?)(?=^## |\Z)", text, re.M | re.S):
        version, date = head.split(" - ")
        # As the packages spell it: 0.1.0rc1 -> 0.1.0~rc1-1 (build.sh's PRERELEASE).
        release, pre = re.match(r"(\d+(?:\.\d+)*)[.-]?(.*)", version).groups()
        items = [" ".join(i.split()) for i in re.split(r"^- ", body, flags=re.M)[1:]]
        out.append({"version": release + ("~" + pre if pre else "") + "-1", "date": date, "items": items})
    if not out:
        sys.exit("CHANGELOG.md: no '## VERSION - DATE' entries")
    return out


def chglog(found: List[Dict], packager: str) -> str:
    return json.dumps([{"semver": e["version"], "date": e["date"] + "T00:00:00Z", "packager": packager,
                        "changes": [{"note": i} for i in e["items"]]} for e in found], indent=1)


def debian(found: List[Dict], packager: str, name: str = "ssdfleet") -> str:
    blocks = []
    for e in found:
        day = datetime.strptime(e["date"], "%Y-%m-%d").replace(tzinfo=timezone.utc)
        items = "\n".join(textwrap.fill(i, width=80, initial_indent="  * ", subsequent_indent="    ",
                                        break_long_words=False, break_on_hyphens=False) for i in e["items"])
        blocks.append(f"{name} ({e['version']}) unstable; urgency=medium\n\n{items}\n\n"
                      f" -- {packager}  {email.utils.format_datetime(day)}\n")
    return "\n".join(blocks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("changelog")
    parser.add_argument("maintainer")
    parser.add_argument("--rpm", required=True)
    parser.add_argument("--deb", required=True)
    args = parser.parse_args()
    with open(args.changelog, encoding="utf-8") as f:
        found = entries(f.read())
    with open(args.rpm, "w", encoding="utf-8") as f:
        f.write(chglog(found, args.maintainer) + "\n")
    with open(args.deb, "w", encoding="utf-8") as f:
        f.write(debian(found, args.maintainer))


if __name__ == "__main__":
    main()
