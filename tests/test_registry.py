"""The source registry (collectors/registry.py) is the one place a source is named: its config
keys, flags, probe-helper rules and collector series all follow from its spec."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from agent import cli
from agent.config import Config, ConfigError, Intervals, load_config
from agent.poller import Poller
from agent.privhelper import TOOL_NAMES, Validator
from collectors import registry
from collectors.source import HostView, Lazy, Refused, SourceSpec
from tests.conftest import ROOT


def test_every_spec_is_well_formed_and_named_once():
    assert len(registry.NAMES) == len(set(registry.NAMES))
    for spec in registry.SOURCES:
        assert isinstance(spec, SourceSpec)
        assert spec.help and spec.interval > 0
        assert spec.priority >= 0


def _lazy_parts(spec: SourceSpec):
    parts = [("build", spec.build), ("helper", spec.helper)]
    if spec.host_view is not None:
        parts += [(f"host_view.{f.name}", getattr(spec.host_view, f.name)) for f in dataclasses.fields(HostView)]
    for command in spec.commands:
        parts += [(f"{command.name}.arguments", command.arguments), (f"{command.name}.run", command.run)]
    return [(what, value) for what, value in parts if isinstance(value, Lazy)]


@pytest.mark.parametrize("spec", registry.SOURCES, ids=lambda s: s.name)
def test_every_lazily_named_part_of_a_spec_resolves(spec):
    """A spec names its implementation lazily (collectors.source.lazy); a misspelt module or
    attribute would fail only when the source first runs, so each is resolved here."""
    for what, value in _lazy_parts(spec):
        assert callable(value.resolve()), f"{spec.name}.{what}: {value!r}"


def test_reading_the_registry_and_the_config_imports_no_source_implementation():
    """The agent reads the registry and its configuration before it listens (issue 32); a
    source's implementation, parsers and views are imported when it is built or shown. Run in
    a fresh interpreter: this test process has imported everything already."""
    code = ("import json, sys\n"
            "import agent.config, collectors.registry\n"
            "from agent.config import load_config\n"
            "load_config(None, {})\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('collectors.'))))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    lazily = {value.module for spec in registry.SOURCES for _, value in _lazy_parts(spec)}
    assert lazily, "no spec names its implementation lazily"
    assert not loaded & lazily, f"imported at start: {sorted(loaded & lazily)}"
    parsers = {m for m in loaded if m.rsplit(".", 1)[-1] in ("json_report", "text_report", "parse", "storcli",
                                                             "megacli", "contract", "nvme_cli", "drivedb")}
    assert not parsers, f"parsers imported at start: {sorted(parsers)}"


def test_config_keys_follow_the_registry():
    config = Config()
    assert tuple(config.collectors) == registry.DEFAULT_ENABLED
    for spec in registry.SOURCES:
        for key, (default, _name) in spec.tools.items():
            assert getattr(config.tools, key) == default
        if spec.settings is not None:
            assert isinstance(getattr(config, spec.name), spec.settings)
        own_interval = spec.settings is not None and "interval_seconds" in spec.settings.model_fields
        assert (spec.name in Intervals.model_fields) is not own_interval
        if not own_interval:
            assert getattr(config.intervals, spec.name) == spec.interval


def test_an_unknown_collector_names_the_known_ones():
    with pytest.raises(ConfigError) as err:
        load_config(None, {"collectors": ["smartctl", "memblaze"]})
    message = str(err.value)
    assert "memblaze" in message
    for name in registry.NAMES:
        assert name in message


@pytest.mark.parametrize("spec", registry.SOURCES, ids=lambda s: s.name)
def test_flags_follow_the_registry(spec):
    parser = cli.build_parser()
    off = parser.parse_args(["collect", f"--no-collector.{spec.name}"])
    assert spec.name not in cli._config(off).collectors
    only = parser.parse_args(["collect", f"--collector.{spec.name}"])
    assert spec.name in cli._config(only).collectors
    if spec.name in Intervals.model_fields:
        args = parser.parse_args(["agent", f"--interval.{spec.name}", "42"])
        assert getattr(cli._config(args).intervals, spec.name) == 42.0
    for key in spec.tools:
        args = parser.parse_args(["collect", "--" + key.replace("_", "-"), "/opt/x/" + key])
        assert getattr(cli._config(args).tools, key) == "/opt/x/" + key


def test_a_disabled_collector_is_not_built_and_exports_nothing(tmp_path):
    config = load_config(None, {"collectors": ["diskstats"], "history": False,
                                "paths": {"sysfs": str(tmp_path), "procfs": str(tmp_path)}})
    poller = Poller(config)
    try:
        assert list(poller.sources) == ["diskstats"]
        poller.poll_once()
        names = {c.name for c in poller.snapshot().collectors}
        assert "diskstats" in names and "smartctl" not in names and "shannon" not in names
    finally:
        poller.stop()


def test_the_helper_runs_only_the_tools_of_sources_with_helper_rules(tmp_path):
    wanted = {name for spec in registry.SOURCES if spec.helper for _k, (_d, name) in spec.tools.items()}
    assert set(TOOL_NAMES) == wanted
    validator = Validator(Config())
    with pytest.raises(Refused, match="unknown tool"):
        validator.check(["rm", "-rf", "/"])
    assert validator.check(["zpool", "status", "-P"]).argv == ("zpool", "status", "-P")
    with pytest.raises(Refused):
        validator.check(["zpool", "destroy", "tank"])
    # A tool a source runs, asked with arguments no source builds, is refused with its name.
    with pytest.raises(Refused):
        validator.check(["smartctl", "--xall", "/dev/sda"])


def test_every_package_folder_is_listed_for_installation():
    """A source that is a folder (collectors/smartctl/) must ship: pyproject.toml lists every
    package, sub-packages too."""
    import re

    from tests.conftest import ROOT

    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    listed = set(re.findall(r'"([a-z_.]+)"', re.search(r"^packages *= *\[(.*)\]", text, re.M).group(1)))
    found = {str(p.parent.relative_to(ROOT)).replace("/", ".")
             for top in ("agent", "collectors", "simulator") for p in (ROOT / top).rglob("__init__.py")}
    assert listed == found
