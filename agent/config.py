"""Agent configuration: a YAML file, overridden by command-line flags.

Every host path and tool path is configuration, so tests (and users with a lab machine) point
the agent at a fixture tree and at fake tools exactly as they would at real ones.
"""

from __future__ import annotations

import logging
import re
from typing import Dict, List, Optional, Tuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator

from collectors import registry
from collectors.runner import DEFAULT_TIMEOUT
from collectors.source import tool_defaults

log = logging.getLogger("ssdfleet.config")

DEFAULT_PORT = 9877
# The sources, their tools, intervals and settings sections come from collectors/registry.py.
COLLECTOR_NAMES = registry.NAMES


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def split_listen_address(address: str):
    """``host:port`` (``[v6]:port``, ``:port``) as (host, port); ValueError naming the problem."""
    host, _, port = str(address).rpartition(":")
    if not (port.isascii() and port.isdigit()):
        raise ValueError(f"listen_address {address!r} needs a port")
    number = int(port)
    if not 0 < number < 65536:
        raise ValueError(f"listen_address {address!r}: port {number} is outside 1..65535")
    host = host.strip("[]") or "0.0.0.0"
    if any(c.isspace() or c in "/[]" for c in host):
        raise ValueError(f"listen_address {address!r}: {host!r} is not a host name or address")
    return host, number


class ConfigError(ValueError):
    """The configuration file or a flag is not valid; the message says which key."""


class _Strict(BaseModel):
    # .inf and .nan are valid YAML floats and no valid setting
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# Tool paths: one key per tool any source runs (collectors/registry.py), its default the
# tool's usual name, found on PATH.
Tools = create_model(
    "Tools", __base__=_Strict,
    **{key: (str, default) for key, default in tool_defaults(registry.SOURCES).items()},
)


class Paths(_Strict):
    sysfs: str = "/sys"
    procfs: str = "/proc"
    dev: str = "/dev"


# At least 0.1 s (a near-zero interval would spin a core), at most a week.
_INTERVAL = dict(ge=0.1, le=7 * 86400)

# Seconds between runs of each source (its spec's default) and of discovery. SMART is read
# every few minutes: the values move slowly and every call costs the drive a little firmware
# time. A source whose settings carry their own ``interval_seconds`` is not listed here.
Intervals = create_model(
    "Intervals", __base__=_Strict,
    **{spec.name: (float, Field(spec.interval, **_INTERVAL)) for spec in registry.SOURCES
       if not (spec.settings and "interval_seconds" in spec.settings.model_fields)},
    discovery=(float, Field(600.0, **_INTERVAL)),
)


class WriteCacheRule(_Strict):
    """Expected write cache state for drives matching ``serial`` or ``model`` (a regex)."""

    serial: Optional[str] = None
    model: Optional[str] = None
    expected: str = "enabled"

    @field_validator("expected")
    @classmethod
    def _state(cls, v: str) -> str:
        if v not in ("enabled", "disabled", "any"):
            raise ValueError("expected must be enabled, disabled or any")
        return v

    @field_validator("model")
    @classmethod
    def _regex(cls, v: Optional[str]) -> Optional[str]:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:  # not a ValueError: pydantic would let it escape
                raise ValueError(f"not a regular expression: {exc}") from None
        return v


class EnduranceRule(_Strict):
    """Rated endurance for drives whose model matches ``model`` (regex): TBW in bytes or
    P/E cycles of the NAND."""

    model: str
    tbw_bytes: Optional[float] = Field(None, gt=0)
    pe_cycles: Optional[float] = Field(None, gt=0)


class TemperatureRule(_Strict):
    """A temperature limit for drives matching ``serial`` or ``model`` (a regex), on one
    ``sensor`` or on every sensor. It replaces the drive's own limit, or stands in where the
    drive reports none (SATA drives rarely do): the alert SSDTemperatureAboveLimit then
    compares against it."""

    serial: Optional[str] = None
    model: Optional[str] = None
    sensor: Optional[str] = None
    celsius: float = Field(gt=0, le=200)

    @field_validator("model")
    @classmethod
    def _regex(cls, v: Optional[str]) -> Optional[str]:
        return WriteCacheRule._regex(v)


class PowerLossProtectionRule(_Strict):
    """Drives matching ``serial`` or ``model`` (a regex) have power-loss protection
    (``protected: true``, the default) or are known to have none (``false``). It sets the
    expected write cache state where no write_cache_rules entry matches (agent/durability.py)."""

    serial: Optional[str] = None
    model: Optional[str] = None
    protected: bool = True

    @field_validator("model")
    @classmethod
    def _regex(cls, v: Optional[str]) -> Optional[str]:
        return WriteCacheRule._regex(v)

    def model_post_init(self, __context) -> None:
        if self.serial is None and self.model is None:
            raise ValueError("a power_loss_protection entry needs a serial or a model")


class _ConfigBase(_Strict):
    listen_address: str = f":{DEFAULT_PORT}"
    web_config_file: Optional[str] = None
    state_dir: Optional[str] = None  # None: $STATE_DIRECTORY, else $XDG_STATE_HOME or ~/.local/state
    history: bool = True
    history_retention_days: float = Field(400.0, gt=0)
    # At most one history sample per drive this often (the projection needs days, not seconds).
    history_min_interval_seconds: float = Field(600.0, ge=1, le=86400)
    # Retention deletes only after the wall clock has agreed with the boot clock this long
    # (after a step, and after boot): a clock a year ahead must not delete a year of rows.
    history_clock_settle_seconds: float = Field(86400.0, ge=0, le=30 * 86400)
    tools: Tools = Tools()
    paths: Paths = Paths()
    intervals: Intervals = Intervals()
    # The one time limit of every tool call (collectors.runner.bounded applies it).
    tool_timeout_seconds: float = Field(DEFAULT_TIMEOUT, ge=0.1, le=3600)
    tool_kill_grace_seconds: float = Field(2.0, ge=0, le=60)
    tool_max_output_bytes: int = Field(8 * 1024 * 1024, gt=1024)
    max_concurrent_probes: int = Field(4, ge=1, le=64)
    # When set, device tools run in the privileged probe helper behind this UNIX socket and
    # the agent itself needs no device privileges (see docs/security.md).
    probe_helper_socket: Optional[str] = None
    collectors: List[str] = list(registry.DEFAULT_ENABLED)
    include_block_devices: bool = True  # drives the kernel knows but no tool reads
    write_cache_expected: str = "enabled"
    write_cache_rules: List[WriteCacheRule] = []
    endurance: List[EnduranceRule] = []
    temperature_limits: List[TemperatureRule] = []
    # Issue 15: drives with (or known to be without) power-loss protection, beyond the model
    # table in agent/durability.py; empty by default.
    power_loss_protection: List[PowerLossProtectionRule] = []
    log_level: str = "INFO"
    # HTTP limits (agent/server.py): a request head must arrive complete within this many
    # seconds of the connection opening (or of its previous response), and a response backed
    # up unread for this long resets the connection; at most this many connections are open,
    # one that does not read (else the oldest idle one) is closed to admit a new one.
    http_request_timeout_seconds: float = Field(10.0, gt=0, le=300)
    http_max_connections: int = Field(512, ge=8, le=65536)
    # How long a SIGTERM may take: stop the poller, end tool processes, flush history.
    shutdown_timeout_seconds: float = Field(10.0, gt=0, le=120)

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data):
        return moved_keys(data) if isinstance(data, dict) else data

    @field_validator("collectors")
    @classmethod
    def _known(cls, v: List[str]) -> List[str]:
        for name in v:
            if name not in COLLECTOR_NAMES:
                raise ValueError(f"unknown collector {name!r}; known: {', '.join(COLLECTOR_NAMES)}")
        return v

    @field_validator("log_level")
    @classmethod
    def _log_level(cls, v: str) -> str:
        if str(v).upper() not in LOG_LEVELS:
            raise ValueError(f"log_level {v!r} is not one of {', '.join(LOG_LEVELS)}")
        return str(v).upper()

    @field_validator("listen_address")
    @classmethod
    def _listen_address(cls, v: str) -> str:
        split_listen_address(v)
        return v

    @field_validator("write_cache_expected")
    @classmethod
    def _expected(cls, v: str) -> str:
        if v not in ("enabled", "disabled", "any"):
            raise ValueError("write_cache_expected must be enabled, disabled or any")
        return v

    def listen_host_port(self):
        try:
            return split_listen_address(self.listen_address)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def expected_write_cache(self, serial: Optional[str], model: Optional[str]) -> Optional[str]:
        """The expected state for a drive (``None`` when the rule says any)."""
        expected = self.write_cache_expected
        for rule in self.write_cache_rules:
            if rule.serial is not None and rule.serial != serial:
                continue
            if rule.model is not None and not re.search(rule.model, model or ""):
                continue
            expected = rule.expected
            break
        return None if expected == "any" else expected


    def temperature_limit(self, serial: Optional[str], model: Optional[str], sensor: str) -> Optional[float]:
        """The configured limit for one sensor of a drive, or None (first matching rule)."""
        for rule in self.temperature_limits:
            if rule.serial is not None and rule.serial != serial:
                continue
            if rule.model is not None and not re.search(rule.model, model or ""):
                continue
            if rule.sensor is not None and rule.sensor != sensor:
                continue
            return rule.celsius
        return None


# The agent's settings: the keys above, plus one section per source that has settings of its
# own, under the source's name (``smartctl:``, ``diskstats:``, ``syncwrite:``), its model
# declared in the source's module.
Config = create_model(
    "Config", __base__=_ConfigBase,
    **{spec.name: (spec.settings, spec.settings()) for spec in registry.SOURCES if spec.settings},
)


def load_config(path: Optional[str] = None, overrides: Optional[Dict] = None) -> Config:
    """Read the YAML file (if any) and apply flag overrides (nested dicts)."""
    data: Dict = {}
    if path:
        import yaml  # only with a file: 20 ms of a start without one (issue 32)

        try:
            with open(path, encoding="utf-8") as fh:
                loaded = yaml.safe_load(fh)
        except OSError as exc:
            raise ConfigError(f"cannot read config {path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"config {path} is not valid YAML: {exc}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"config {path} is not UTF-8 text (byte {exc.start})") from None
        except RecursionError:
            raise ConfigError(f"config {path} is nested too deeply") from None
        except ValueError as exc:  # PyYAML builds dates itself: "2001-13-45" is a plain ValueError
            raise ConfigError(f"config {path}: a value YAML reads as a date is not one ({exc})") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"config {path}: the top level must be a mapping")
        data = loaded
    if overrides:
        data = _merge(data, overrides)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {_msg(err['msg'])}" for err in exc.errors()
        )
        raise ConfigError(f"invalid configuration: {problems}") from None


# Top-level keys that moved into a source's own section (issue 27), accepted with a warning
# for one release: old key -> (section, key in it).
MOVED_KEYS: Dict[str, Tuple[str, str]] = {
    old: (spec.name, key) for spec in registry.SOURCES for old, key in spec.moved_keys.items()
}


def moved_keys(data: Dict) -> Dict:
    """``data`` with each old top-level key (:data:`MOVED_KEYS`) put into its source's section,
    and a warning for each. A value the section sets itself wins, and the warning says the old
    one is ignored. The section must be a mapping for the move; otherwise validation reports
    it as it would."""
    if not any(key in data for key in MOVED_KEYS):
        return data
    out = dict(data)
    for old, (section, key) in MOVED_KEYS.items():
        if old not in out:
            continue
        value = out.pop(old)
        own = out.get(section)
        if own is None:
            own = {}
        if not isinstance(own, dict):
            out[old] = value  # leave it: "extra inputs are not permitted" names it
            continue
        if key in own:
            log.warning("config: %s is deprecated and ignored: %s.%s is set (remove %s)", old, section, key, old)
            continue
        out[section] = dict(own, **{key: value})
        log.warning("config: %s is deprecated; write it as %s: {%s: ...} (the old key is read until the "
                    "next release)", old, section, key)
    return out


def _msg(text: str) -> str:
    # pydantic prefixes our own ValueError messages; they already say what is wrong
    return text[len("Value error, "):] if text.startswith("Value error, ") else text


def _merge(base: Dict, extra: Dict) -> Dict:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


# -- reloading (SIGHUP) ----------------------------------------------------------------------
#
# A reload reads the file again and applies the same flags on top, validated by the models
# above; a file that does not validate changes nothing. What a running agent can take at once
# and what waits for a restart (docs/configuration.md, "Reloading the configuration"):

# Read once at start; a reload that changes one keeps the running value and says so.
RESTART_KEYS: Dict[str, str] = {
    "listen_address": "the listening socket is bound at start",
    "web_config_file": "TLS and basic auth are set up at start",
    "http_request_timeout_seconds": "the HTTP server's limits are set at start",
    "http_max_connections": "the HTTP server's limits are set at start",
    "state_dir": "the history database is opened at start",
    "history": "the history database is opened at start",
    "history_retention_days": "the history database is opened at start",
    "history_min_interval_seconds": "the history database is opened at start",
    "max_concurrent_probes": "the probe pool is sized at start",
    "probe_helper_socket": "the probe helper connection is set up at start",
}

# Settings the sources read when they are built: changing one builds every running source
# again (agent/poller.py, Poller.reload). A source is also built again when its own settings
# section or one of its tool paths changes. Every other key applies at the next cycle; the
# tools' timeout and output cap at the next tool call (the runner reads them at each call).
SOURCE_KEYS = ("paths", "tool_kill_grace_seconds")


def reload_plan(running: Config, loaded: Config):
    """What a reload does: (the configuration to apply, the keys it changes, the keys that
    changed but need a restart). The configuration to apply is ``loaded`` with every
    :data:`RESTART_KEYS` value put back to the running one."""
    before, after = running.model_dump(), loaded.model_dump()
    changed = [key for key in after if before.get(key) != after[key]]
    restart = [key for key in changed if key in RESTART_KEYS]
    applied = loaded.model_copy(update={key: getattr(running, key) for key in restart})
    return applied, [key for key in changed if key not in RESTART_KEYS], restart
