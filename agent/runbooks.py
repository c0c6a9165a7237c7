"""The shipped runbook (docs/runbooks.md), served by the agent at ``/runbooks`` as HTML, so that
every alert's ``runbook_url`` works out of the box: the shipped rules point it at
``http://<instance>/runbooks#<alert name in lower case>`` (deploy/prometheus/ssdfleet-alerts.yml),
the agent that raised the alert.

Where the text is found, first hit wins (:data:`CANDIDATES`): the copy packaged inside the
``agent`` package (``agent/runbooks.md``, when the build puts one there), the source checkout
the agent runs from (``docs/runbooks.md``), and the documentation the .deb and .rpm install
(``/usr/share/doc/ssdfleet/runbooks.md``, gzipped or not, and the same under the Python
prefix for a virtualenv). It is read and rendered once, when the app is built: a request only
copies bytes.

The rendering covers the Markdown the runbook is written in (headings, paragraphs, bullet and
numbered lists, fenced code, rules, inline code, bold, italics and links) with the standard
library alone: a Markdown library would be a new dependency in every package for one page.
Heading ids follow GitHub's rule (lower case, punctuation dropped, spaces to hyphens), so
``#ssdwritecachedisabled`` finds the same section here as on a Git forge.
"""

from __future__ import annotations

import gzip
import html
import os
import re
import sys
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

from agent import __version__

ROUTE = "/runbooks"

_HERE = Path(__file__).resolve().parent
CANDIDATES: Tuple[Path, ...] = (
    _HERE / "runbooks.md",  # package data, when the build includes it
    _HERE.parent / "docs" / "runbooks.md",  # a source checkout
    Path("/usr/share/doc/ssdfleet/runbooks.md"),  # the .deb and .rpm
    Path("/usr/share/doc/ssdfleet/runbooks.md.gz"),
    Path(sys.prefix) / "share" / "doc" / "ssdfleet" / "runbooks.md",  # a virtualenv's share/
)


def find_runbook(candidates: Sequence[Path] = CANDIDATES) -> Optional[Path]:
    for path in candidates:
        if path.is_file():
            return path
    return None


def read_runbook(path: Path) -> str:
    opener: Callable = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return fh.read()


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: ``SSDWriteCacheDisabled`` -> ``ssdwritecachedisabled``,
    ``The sync-write probe under systemd`` -> ``the-sync-write-probe-under-systemd``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


# -- inline ------------------------------------------------------------------------------

_CODE = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)([^*]+?)(?<!\s)\*(?![\w*])")
_SAFE_URL = re.compile(r"^(#|https?://|[\w./-]+$)")


def inline(text: str) -> str:
    """One line's inline Markdown as HTML; everything else escaped. Code spans are cut out
    first so that nothing inside them is read as markup."""
    spans: List[str] = []

    def keep(match: re.Match) -> str:
        spans.append(f"<code>{html.escape(match.group(1))}</code>")
        return f"\0{len(spans) - 1}\0"

    text = _CODE.sub(keep, text)
    text = html.escape(text, quote=False)

    def link(match: re.Match) -> str:
        url = html.unescape(match.group(2))
        if not _SAFE_URL.match(url):  # no javascript: or other schemes
            return match.group(0)
        return f'<a href="{html.escape(url, quote=True)}">{match.group(1)}</a>'

    text = _LINK.sub(link, text)
    text = _BOLD.sub(r"<strong>\1</strong>", text)
    text = _ITALIC.sub(r"<em>\1</em>", text)
    return re.sub("\0(\\d+)\0", lambda m: spans[int(m.group(1))], text)


# -- blocks ------------------------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[*-]\s+(.*)$")
_NUMBER = re.compile(r"^(\s*)\d+[.)]\s+(.*)$")


def to_html(markdown: str) -> Tuple[str, List[Tuple[int, str, str]]]:
    """(HTML body, headings as (level, text, id)) of the runbook's Markdown."""
    out: List[str] = []
    headings: List[Tuple[int, str, str]] = []
    lines = markdown.splitlines()
    i = 0
    paragraph: List[str] = []

    def flush() -> None:
        if paragraph:
            out.append("<p>" + " ".join(inline(p.strip()) for p in paragraph) + "</p>")
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            block = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                block.append(lines[i])
                i += 1
            out.append("<pre><code>" + html.escape("\n".join(block)) + "</code></pre>")
            i += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level, text = len(heading.group(1)), heading.group(2)
            anchor = slug(text)
            headings.append((level, text, anchor))
            out.append(f'<h{level} id="{anchor}">{inline(text)} <a class="self" href="#{anchor}">#</a></h{level}>')
        elif re.fullmatch(r"\s*(-{3,}|\*{3,})\s*", line):
            flush()
            out.append("<hr>")
        elif _BULLET.match(line) or _NUMBER.match(line):
            flush()
            i = _list(lines, i, out)
            continue
        elif not line.strip():
            flush()
        else:
            paragraph.append(line)
        i += 1
    flush()
    return "\n".join(out), headings


def _list(lines: List[str], i: int, out: List[str]) -> int:
    """A list from line ``i``: each item with its continuation lines (indented, or plain lines
    right after it); returns the index after the list."""
    numbered = bool(_NUMBER.match(lines[i])) and not _BULLET.match(lines[i])
    tag = "ol" if numbered else "ul"
    items: List[List[str]] = []
    while i < len(lines):
        line = lines[i]
        item = (_NUMBER if numbered else _BULLET).match(line)
        if item:
            items.append([item.group(2)])
        elif line.strip() and items and not _HEADING.match(line) and not line.startswith("```") \
                and not (_BULLET.match(line) or _NUMBER.match(line)):
            items[-1].append(line.strip())
        else:
            break
        i += 1
    out.append(f"<{tag}>" + "".join("<li>" + " ".join(inline(p) for p in item) + "</li>" for item in items)
               + f"</{tag}>")
    return i


_CSS = """
body { margin:0; font:15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color:#1d2125; background:#fbfbfc; }
@media (prefers-color-scheme: dark) { body { color:#e4e6e9; background:#15181b; } a { color:#7fb0e6; } pre, code { background:#23282d; } }
main { max-width:52rem; padding:1rem 1.2rem 3rem; margin:0 auto; overflow-wrap:anywhere; }
nav { font-size:.9rem; columns:16rem; margin:1rem 0; }
nav a { display:block; }
pre { overflow-x:auto; background:#eef0f2; padding:.6rem .8rem; border-radius:4px; }
code { font-family:ui-monospace, "DejaVu Sans Mono", monospace; font-size:.9em; background:#eef0f2; padding:0 .2rem; border-radius:3px; }
pre code { padding:0; background:none; }
h2 { margin-top:2.2rem; border-top:1px solid #dde1e5; padding-top:1rem; }
h2:target { background:#fff1d1; }
a.self { font-size:.8em; text-decoration:none; color:#9aa2ab; }
"""


def render(markdown: str, source: str) -> str:
    """The whole ``/runbooks`` page: a table of contents of the alerts, then the runbook."""
    body, headings = to_html(markdown)
    toc = "".join(f'<a href="#{anchor}">{html.escape(text)}</a>' for level, text, anchor in headings if level == 2)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>ssdfleet runbooks</title><style>{_CSS}</style></head><body><main>"
            f'<p><a href="./">&#8592; this host\'s drives</a></p><nav>{toc}</nav>{body}'
            f'<hr><p><small>ssdfleet {html.escape(__version__)}, from {html.escape(source)}</small></p>'
            f"</main></body></html>")


def not_found_page(candidates: Sequence[Path] = CANDIDATES) -> str:
    looked = "".join(f"<li><code>{html.escape(str(p))}</code></li>" for p in candidates)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>runbooks not installed</title>'
            f"<style>{_CSS}</style></head><body><main><h1>The runbook is not installed here</h1>"
            f"<p>This agent looked for <code>runbooks.md</code> in:</p><ul>{looked}</ul>"
            f"<p>It ships in the ssdfleet package and in the source tree (<code>docs/runbooks.md</code>). "
            f"Alerts can point elsewhere: set the <code>ssdfleet_runbook_url</code> external label in "
            f"Prometheus (README.md, \"Alerts and dashboards\").</p></main></body></html>")


def load_page(candidates: Sequence[Path] = CANDIDATES) -> Tuple[int, bytes]:
    """(HTTP status, page) for ``/runbooks``, read once: 200 with the runbook, or 404 with
    where it was looked for (and a log-worthy reason never stops the agent)."""
    path = find_runbook(candidates)
    if path is None:
        return 404, not_found_page(candidates).encode()
    try:
        return 200, render(read_runbook(path), os.fspath(path)).encode()
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        return 404, not_found_page(candidates).replace(
            "</h1>", f"</h1><p>{html.escape(os.fspath(path))}: {html.escape(str(exc))}</p>", 1).encode()
