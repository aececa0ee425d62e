"""Validation errors in plain words: ``query is too long: 112500 characters, at most 4000`` rather than
pydantic's ``Value should have at most 4000 items after validation, not 112500``.

:func:`plain` words one error as pydantic reports it (a dict with ``type``, ``loc``, ``msg`` and, for
limits, ``ctx``); :func:`plain_all` joins a few. Pure: the API's 422 bodies and the CLI's ``error:`` lines
both use them. Nothing of the input is echoed back, only its length or type.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["field_name", "plain", "plain_all"]

_COLLECTIONS = {"List", "Tuple", "Set", "Dict", "Frozenset"}  # pydantic's ctx.field_type of a sized container
_WHAT = {  # the type of a value an error says was expected
    "int": "a whole number (a JSON integer, not in quotes)",
    "float": "a number",
    "bool": "true or false",
    "string": "text",
    "list": "a list",
    "dict": "an object",
    "model": "an object",
    "datetime": "a date and time with a zone (ISO 8601, e.g. 2024-05-01T09:30:00+08:00)",
    "date": "a date (ISO 8601, e.g. 2024-05-01)",
}
_LOCATIONS = ("body", "query", "path", "header")  # FastAPI's first loc part: where, not which field
_BOUNDS = {"greater_than_equal": ("at least", "ge"), "greater_than": ("more than", "gt"),
           "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt")}  # fmt: skip
_SAID = {  # error type -> its sentence, from the field's name and the error's context
    "literal_error": "{name} must be one of {expected}",
    "enum": "{name} must be one of {expected}",
    "missing": "{name} is missing",
    "extra_forbidden": "{name} is not a known field",
    "json_invalid": "the body is not valid JSON ({error})",
    "timezone_aware": "{name} needs a zone (e.g. 2024-05-01T09:30:00Z)",
    "int_from_float": "{name} must be a whole number",
}


def field_name(loc: Iterable[Any]) -> str:
    """``("body", "messages", 3, "text")`` -> ``messages[3].text``; ``("body",)`` -> ``the request body``;
    ``()`` -> ``the request``."""
    parts = list(loc)
    if parts == ["body"]:
        return "the request body"
    if parts and parts[0] in _LOCATIONS and len(parts) > 1:
        parts = parts[1:]
    name = ""
    for p in parts:
        name += f"[{p}]" if isinstance(p, int) else (f".{p}" if name else str(p))
    return name or "the request"


def _expected(kind: str) -> str | None:
    """What an ``<x>_type`` / ``<x>_parsing`` error expected, in words."""
    for suffix in ("_from_date_parsing", "_parsing", "_type"):
        if kind.endswith(suffix) and kind.removesuffix(suffix) in _WHAT:
            return _WHAT[kind.removesuffix(suffix)]
    return None


def plain(err: Mapping[str, Any]) -> str:
    """One validation error as a sentence naming the field."""
    kind = str(err.get("type", ""))
    ctx = err.get("ctx") or {}
    name = field_name(err.get("loc", ()))
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if kind in ("too_long", "string_too_long"):
        unit = "items" if ctx.get("field_type") in _COLLECTIONS else "characters"
        actual = ctx.get("actual_length")
        has = f"{actual} {unit}, " if actual is not None else ""
        return f"{name} is too long: {has}at most {ctx.get('max_length')}"
    if kind in ("too_short", "string_too_short"):
        least = ctx.get("min_length")
        if least == 1:
            return f"{name} is empty"
        unit = "items" if ctx.get("field_type") in _COLLECTIONS else "characters"
        return f"{name} is too short: at least {least} {unit}"
    if kind == "string_pattern_mismatch":
        return f"{name} is blank" if ctx.get("pattern") == r"\S" else f"{name} does not have the expected form"
    if kind in _BOUNDS:
        word, key = _BOUNDS[kind]
        return f"{name} must be {word} {ctx.get(key, '')}"
    if kind in ("model_attributes_type", "model_type", "dict_type") and name == "the request body":
        return f"{name} must be a JSON object (sent with content-type: application/json)"
    if kind in _SAID:
        return _SAID[kind].format(name=name, expected=ctx.get("expected", ""), error=ctx.get("error", msg))
    if (what := _expected(kind)) is not None:
        return f"{name} must be {what}"
    return f"{name}: {msg}"


def plain_all(errors: Iterable[Mapping[str, Any]], limit: int = 3) -> str:
    """The first ``limit`` errors in plain words, ``; ``-joined (with how many more there are)."""
    errors = list(errors)
    said = "; ".join(plain(e) for e in errors[:limit])
    return said + (f" (and {len(errors) - limit} more)" if len(errors) > limit else "")
