"""Adaptec / Microsemi / Microchip SmartRAID controllers through arcconf.

The pure parsers are :mod:`.parse`; the source that runs the tool is :mod:`.source`."""

from collectors.arcconf.parse import Task, parse_getconfig, parse_getstatus, with_tasks

__all__ = ["parse_getconfig", "parse_getstatus", "with_tasks", "Task"]
