"""The evidence report (bench/corpus_report.py) over every real smartctl report in the repository:
no exception escapes, every drive's figures are given or withheld with a classified reason, and
where a drive has two independent sources of a figure their agreement is printed."""

from __future__ import annotations

import importlib.util
import sys

from tests.conftest import ROOT, fixture_files

_spec = importlib.util.spec_from_file_location("corpus_report", ROOT / "bench" / "corpus_report.py")
corpus_report = importlib.util.module_from_spec(_spec)
sys.modules["corpus_report"] = corpus_report  # dataclasses look their module up there
_spec.loader.exec_module(corpus_report)


def test_corpus_evidence_report(capsys) -> None:
    paths = []
    for folder in corpus_report.FOLDERS:
        paths += [p for p in fixture_files(folder) if p.suffix in (".json", ".txt")]
    rep = corpus_report.report(paths)
    with capsys.disabled():
        print("\n\nevidence report\n" + "\n".join(rep.lines()))
    assert not rep.exceptions, rep.exceptions
    assert rep.files >= 2000 and rep.drives >= 1900
    # every withheld figure has a reason the report can name
    for figure, reasons in rep.withheld.items():
        assert "other" not in reasons, (figure, reasons)
    # the standards and the vendor attributes agree on most drives that carry both; the rest
    # are the broken counters the normaliser recognises (tests/sources/smartctl/test_host_writes.py)
    for figure in corpus_report.FIELDS:
        assert rep.both[figure] >= 300
        assert rep.agree[figure] / rep.both[figure] >= 0.85, figure
