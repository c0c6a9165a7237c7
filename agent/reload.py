"""Reloading the configuration on SIGHUP (agent/signals.py), as Prometheus and Alertmanager do.

The file is read again and the command-line flags applied on top, through the same pydantic
models as at start; the web config file is parsed again too. When either does not validate,
nothing changes: the running configuration stays, one ERROR line says why, and
``ssd_config_last_reload_successful`` is 0 until a reload succeeds. A good configuration is
applied (agent/config.py ``reload_plan`` says what can change live and what needs a restart;
agent/poller.py ``Poller.reload`` applies it) and one INFO line says what changed.

The web config (TLS, basic auth) is read once at start: exporter-toolkit reads it again for
every connection, but here TLS is set up in the listening server and basic auth in the app,
both built at start, and switching TLS on or off cannot happen on an open socket anyway. A
reload checks the file still parses (so the next restart will not fail) and says when it
changed and needs a restart.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Optional

from agent.config import RESTART_KEYS, Config, reload_plan

log = logging.getLogger("ssdfleet")


class Reloader:
    """``load()`` returns the configuration as the agent would start with it now (file and
    flags) or raises ConfigError; ``web`` is the web config the agent started with."""

    def __init__(self, load: Callable[[], Config], poller: Any, web: Optional[Any]) -> None:
        self._load = load
        self._poller = poller
        self._web = web

    def __call__(self) -> bool:
        started = time.monotonic()
        from agent import webconfig

        try:
            loaded = self._load()
            web = webconfig.load_web_config(loaded.web_config_file) if loaded.web_config_file else None
        except ValueError as exc:  # ConfigError, WebConfigError
            return self._failed(str(exc))
        except Exception as exc:  # any other refusal: the running configuration must stay
            return self._failed(f"{type(exc).__name__}: {exc}")
        applied, changed, restart = reload_plan(self._poller.config, loaded)
        try:
            sources = self._poller.reload(applied)
        except Exception as exc:  # a source that cannot be built with the new settings
            return self._failed(f"a source could not be set up: {type(exc).__name__}: {exc}")
        logging.getLogger().setLevel(applied.log_level)
        self._poller.reload_succeeded()
        web_note = ""
        if "web_config_file" not in restart and web != self._web:
            web_note = "; the web config file changed: it takes effect at the next restart"
        log.info("configuration reloaded in %.2fs: %s%s%s", time.monotonic() - started,
                 ("changed " + ", ".join(changed)) if changed else "no change",
                 f" ({', '.join(sources)})" if sources else "", web_note)
        if restart:
            log.warning("configuration reload: %s changed but needs a restart (%s); the running value stays "
                        "until then", ", ".join(restart), "; ".join(sorted({RESTART_KEYS[k] for k in restart})))
        return True

    def _failed(self, why: str) -> bool:
        log.error("configuration reload failed, the running configuration stays: %s", why)
        self._poller.reload_failed()
        return False
