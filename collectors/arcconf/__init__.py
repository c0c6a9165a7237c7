"""Adaptec / Microsemi / Microchip SmartRAID controllers through arcconf.

Pure parsers only (the source that runs the tool is wired in separately)."""

from collectors.arcconf.parse import Task, parse_getconfig, parse_getstatus, with_tasks

__all__ = ["parse_getconfig", "parse_getstatus", "with_tasks", "Task"]
