"""Typed fields of smartctl's JSON output: each is None (or {}) when absent, and a ParseError
naming the field's path when smartctl printed another type, so a parser never mistakes a
string or a bool for a count. Shared by the log, SCT temperature and self-test status parsers."""

from __future__ import annotations

from typing import Any, Dict, Optional

from collectors.model import ParseError


def json_int(value: Any, where: str) -> Optional[int]:
    """An integer field of smartctl's JSON, None when absent; a ParseError naming ``where`` when
    it is another type (a bool is not a count). Shared by the smartctl parsers of logs, the SCT
    temperature history and the self-test scheduler's status query."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParseError(f"smartctl JSON: {where} is {type(value).__name__}, expected an integer")
    return value


def json_obj(value: Any, where: str) -> Dict[str, Any]:
    """An object field of smartctl's JSON, {} when absent; a ParseError naming ``where`` otherwise."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(f"smartctl JSON: {where} is {type(value).__name__}, expected an object")
    return value
