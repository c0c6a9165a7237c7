"""ssdfleet collectors: one module per source, each a probe (I/O) and pure parsers."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping, Tuple


def lazy_exports(package: str, homes: Mapping[str, Tuple[str, str]]) -> Callable[[str], Any]:
    """A package's module ``__getattr__`` (PEP 562) for the names it re-exports from its modules:
    ``homes`` maps each name to (module, attribute), imported on first use and then kept on the
    package. Importing the package (for its spec, at the agent's start) then imports no parser
    (issue 32)."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home[0]), home[1])
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
