"""bench/ scripts loaded as modules by the tests that use their models (bench/ is not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent.parent


def load_bench(script: str, name: str = "") -> ModuleType:
    """bench/<script>.py as a module named ``name`` (default: the script's)."""
    spec = importlib.util.spec_from_file_location(name or script, ROOT / "bench" / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_fleet_scale(name: str = "fleet_scale") -> ModuleType:
    """bench/fleet_scale.py as a module: its fleet model, renderer and rule helpers."""
    return load_bench("fleet_scale", name)
