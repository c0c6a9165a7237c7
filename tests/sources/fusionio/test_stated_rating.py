"""A rating and power-loss protection the drive's own tool states (issue 29, class 4).

fio-status -a prints "Rated PBW: 5.00 PB, 99.41% remaining" (its "% remaining" counts the
physical bytes written against that rating) and, per module, "Powerloss protection: protected".
Both become fields of the reading (``rated_nand_written_bytes``, ``power_loss_protection``), and a
plug-in may state them too (``rated_host_written_bytes`` for a TBW), so a Memblaze card behind a
plug-in needs no configuration row. The agent uses them after the user's configuration and
before its model tables: the projection's rating, and the write cache to expect."""

from __future__ import annotations

import json

import pytest

from agent import durability
from agent.endurance import RatedEndurance, rated_endurance, stated_endurance
from agent.projection import RATED, project_all, rated_host_bytes
from collectors.fusionio.parse import parse_status as parse_fio_status
from collectors.model import CACHE_ENABLED, ParseError
from collectors.plugin.contract import parse_document
from tests.conftest import read_fixture

DUO = "fusionio/iomemory-vsl-readme__iodrive-duo_vsl3.2.16.txt"
IODRIVE2 = "fusionio/remixvsl__iodrive2-1t2_vsl3.2.16.txt"
PERCONA = "fusionio/percona-toolkit__fio-003_original_output.txt"
T0 = 1_700_000_000.0


def fio(relative: str):
    return parse_fio_status(read_fixture(relative).decode())


class _Config:
    power_loss_protection = ()
    write_cache_rules = ()

    def __init__(self, rules=()):
        self.power_loss_protection = rules

    @staticmethod
    def expected_write_cache(serial, model):
        return None


@pytest.mark.parametrize("relative, pbw", [(DUO, 5.00e15), (IODRIVE2, 17.00e15)])
def test_fio_status_rated_pbw_is_the_rating(relative, pbw):
    (r,) = fio(relative)
    assert r.rated_nand_written_bytes == pbw
    assert "Rated PBW" in r.sources["rated_nand_written_bytes"]
    rated = rated_endurance(r.model, r.capacity_bytes, model_family=None, stated=stated_endurance(r))
    assert rated.nand_bytes == pbw and rated.source.startswith("drive's tool: fio-status")
    projections = project_all(r, T0, None, rated)
    p = next(p for p in projections if p.method == RATED)
    assert p.inputs["nand_endurance_bytes"] == pbw
    # no write amplification known (fio-status prints media-side volumes only): 1.0, said so
    assert rated_host_bytes(rated, r, projections) == pbw and p.inputs["write_amplification"] == 1.0


def test_the_users_rating_wins_over_the_tools():
    (r,) = fio(DUO)
    mine = rated_endurance(r.model, r.capacity_bytes, {"ioDrive": {"tbw_tb": 1000}}, stated=stated_endurance(r))
    assert mine.tbw_bytes == 1000e12 and mine.nand_bytes is None


def test_powerloss_protected_modules():
    """The Duo README capture: the module says "protected". Percona's capture: every module says
    "protected", the adapters "available" (their lines are not a module's)."""
    (r,) = fio(DUO)
    assert r.power_loss_protection is True and "protected" in r.sources["power_loss_protection"]
    modules = fio(PERCONA)
    assert modules and all(m.power_loss_protection is True for m in modules)


def test_stated_protection_sets_the_expected_cache_after_the_configuration():
    (r,) = fio(DUO)
    assert durability.power_loss_protection(_Config(), r.serial, r.model, r.power_loss_protection) == (
        True, "the drive's tool")
    assert durability.expected_write_cache(_Config(), r.serial, r.model, r.power_loss_protection) == CACHE_ENABLED

    class Rule:
        serial, model, protected = r.serial, None, False
    assert durability.power_loss_protection(_Config([Rule]), r.serial, r.model, True) == (False, "config")


def test_no_stated_figures_leave_the_table_in_charge():
    (r,) = fio("fusionio/iomemory-vsl-readme__hp-iodrive-320_vsl3.2.10_no-a.txt")  # plain fio-status: no rating
    assert r.rated_nand_written_bytes is None and stated_endurance(r) is None


def _plugin(**drive) -> bytes:
    base = {"serial": "MB123", "sources": {}}
    base.update(drive)
    return json.dumps({"ssdfleet_plugin": 1, "drives": [base]}).encode()


def test_a_plugin_states_a_tbw_and_protection():
    """A Memblaze PBlaze plug-in (seeds/002's card) stating the card's rating and its capacitors."""
    (r,) = parse_document(_plugin(rated_host_written_bytes=8_760 * 10**12, power_loss_protection=True, sources={
        "rated_host_written_bytes": "memmonitor 'endurance: 8.76 PBW'",
        "power_loss_protection": "memmonitor 'power fail protection: enabled'"}), "memblaze")
    rated = stated_endurance(r)
    assert rated == RatedEndurance(8.76e15, None, "drive's tool: plugin memblaze: memmonitor 'endurance: 8.76 PBW'")
    assert durability.power_loss_protection(_Config(), r.serial, r.model, r.power_loss_protection)[0] is True


@pytest.mark.parametrize("drive, why", [
    ({"rated_host_written_bytes": 10**15}, "without evidence"),
    ({"rated_nand_written_bytes": 0, "sources": {"rated_nand_written_bytes": "x"}}, "greater than or equal to 1"),
    ({"power_loss_protection": "yes", "sources": {"power_loss_protection": "x"}}, "valid boolean"),
    ({"rated_host_written_bytes": 1.5e15, "sources": {"rated_host_written_bytes": "x"}}, "valid integer"),
])
def test_malformed_plugin_ratings_are_rejected(drive, why):
    with pytest.raises(ParseError, match=why):
        parse_document(_plugin(**drive), "bad")
