"""Bad tool arguments, said in one line a model can act on."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def argument_error(
    tool: str, exc: ValidationError, arguments: Mapping[str, Any] | None = None, schema: Mapping[str, Any] | None = None
) -> str:
    """Bad arguments in one line a model can act on: ``limit must be at most 100, got 1000``.

    With the call's ``arguments`` and the tool's input ``schema``, keys the tool does not take are named too
    (``name`` given where ``entity_name`` is missing), each with the closest key it does take.
    """
    parts = [*unknown_keys(arguments, schema), *(_one(err) for err in exc.errors())]
    return f"invalid arguments for {tool}: " + "; ".join(parts)


def unknown_keys(arguments: Mapping[str, Any] | None, schema: Mapping[str, Any] | None) -> list[str]:
    """``'name' is not an argument of this tool (did you mean 'entity_name'?)`` for each unknown key."""
    known = (schema or {}).get("properties") or {}  # looked up as a dict: this runs before every call
    if not arguments or not known or (schema or {}).get("additionalProperties"):  # a tool that takes any key
        return []
    found = []
    for key in arguments:
        if key not in known:
            close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.5)
            hint = f"did you mean '{close[0]}'?" if close else f"it takes: {', '.join(known)}"
            found.append(f"'{key}' is not an argument of this tool ({hint})")
    return found


def _one(err: Any) -> str:
    name = _where(err["loc"])
    ctx, kind, got = err.get("ctx") or {}, err["type"], err.get("input")
    bounds = {
        "less_than_equal": ("at most", "le"),
        "less_than": ("less than", "lt"),
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("more than", "gt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"{name} must be {words} {ctx.get(key)}, got {got!r}"
    if kind == "missing":
        return f"{name} is required"
    if kind in ("string_too_short", "too_short"):
        unit = "character" if kind == "string_too_short" else "item"
        n = ctx.get("min_length")
        return f"{name} must have at least {n} {unit}{'s' if n != 1 else ''}"
    if kind in ("string_too_long", "too_long"):
        unit = "character" if kind == "string_too_long" else "item"
        return f"{name} must have at most {ctx.get('max_length')} {unit}s"
    if kind in _EXPECTED:
        return f"{name} must be {_EXPECTED[kind]}, got {got!r}"
    if kind == "literal_error":
        return f"{name} must be one of {ctx.get('expected')}, got {got!r}"
    if kind == "string_pattern_mismatch":
        return f"{name} must match {ctx.get('pattern')}, got {got!r}"
    return f"{name}: {err['msg']} (got {got!r})"


def _where(loc: tuple[Any, ...]) -> str:
    parts = [str(loc[0]) if loc else "arguments"]
    parts += [f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:]]
    return "".join(parts)
