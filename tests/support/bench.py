"""bench/ scripts loaded as modules by the tests that use their models (bench/ is not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent.parent


def load_fleet_scale(name: str = "fleet_scale") -> ModuleType:
    """bench/fleet_scale.py as a module: its fleet model, renderer and rule helpers."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / "fleet_scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
