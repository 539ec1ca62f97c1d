"""Tool schemas as short as they stay exact: what pydantic writes that tells a client nothing is left out.

Every client receives every tool's schemas before the user says a word, so each byte counts:

- ``title`` of each model and property: pydantic derives it from the name (``"Start Line"`` for
  ``start_line``);
- a ``$defs`` entry used once: written in place, since a ``$ref`` and its definition cost more;
- in an output schema, ``default``: a result never falls back to one;
- in an input schema, an optional parameter that defaults to None is shown as its value's type
  (``{"type": "string"}``, not ``{"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}``):
  leaving it out of ``required`` already says it may be omitted, and omitting it is what null means.
  The server still accepts an explicit null (calls are validated by the tool's own model, not by this
  schema); the schema shows the one way to say "none" (about 40 bytes for each such parameter);
- in an input schema, a parameter's ``additionalProperties: true`` (a dict): JSON Schema assumes it;
- in an input schema, bounds (``minimum``, ``maxLength``, ``maxItems``, ...): the tool's own model
  checks them on every call and answers one outside them in a line that names the bound (``limit must
  be at most 100, got 500``); a model rarely reaches one, and would pay for all of them on every turn.
  What a model needs to fill a parameter stays: its name, type, default, choices (``enum``), format
  (``pattern``) and description.

Names, types, ``required`` and every parameter default are untouched, and calls are validated exactly
as before. An output schema passes and fails the same instances as before (a client may validate a
result against it).
"""

from __future__ import annotations

import copy
from typing import Any

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA = ("items", "additionalProperties", "not", "contains")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs")
_NULL = {"type": "null"}
_BOUNDS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
)


def compact(schema: dict[str, Any], *, output: bool = False) -> dict[str, Any]:
    schema = copy.deepcopy(schema)
    _inline_single_use_defs(schema)
    if not output:
        _simplify_input(schema)
    _strip(schema, ("title", "default") if output else ("title",))
    return schema


def _children(node: dict[str, Any]) -> list[Any]:
    found = [node[key] for key in _SUBSCHEMA if isinstance(node.get(key), dict)]
    found += [item for key in _SUBSCHEMA_LISTS for item in node.get(key, [])]
    found += [sub for key in _SUBSCHEMA_MAPS for sub in node.get(key, {}).values()]
    return found


def _strip(node: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        node.pop(key, None)
    if "default" in node and node["default"] is None:
        del node["default"]
    for child in _children(node):
        if isinstance(child, dict):
            _strip(child, keys)


def _simplify_input(node: dict[str, Any]) -> None:
    """At every depth: bounds go, and each optional property that defaults to None loses its ``null`` branch."""
    for key in _BOUNDS:
        node.pop(key, None)
    required = set(node.get("required", ()))
    for name, prop in (node.get("properties") or {}).items():
        if not isinstance(prop, dict) or name in required or prop.get("default", ...) is not None:
            continue
        branches = prop.get("anyOf")
        if not isinstance(branches, list) or _NULL not in branches or len(branches) < 2:
            continue
        rest = [b for b in branches if b != _NULL]
        del prop["anyOf"], prop["default"]
        if len(rest) == 1 and not set(rest[0]) & set(prop):
            prop.update(rest[0])  # the one remaining branch, in place (its description stays the field's)
        else:
            prop["anyOf"] = rest
    for prop in (node.get("properties") or {}).values():
        if isinstance(prop, dict) and prop.get("additionalProperties") is True:
            del prop["additionalProperties"]  # what JSON Schema assumes without it (a dict parameter)
    for child in _children(node):
        if isinstance(child, dict):
            _simplify_input(child)


def _refs(node: dict[str, Any], found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every ``$ref`` object under ``node`` (definitions included)."""
    if "$ref" in node:
        found.append(node)
    for child in _children(node):
        if isinstance(child, dict):
            _refs(child, found)
    return found


def _inline_single_use_defs(schema: dict[str, Any]) -> None:
    defs = schema.get("$defs", {})
    changed = True
    while changed:
        changed = False
        refs = _refs(schema, [])
        for name in list(defs):
            target = f"#/$defs/{name}"
            uses = [ref for ref in refs if ref["$ref"] == target]
            if len(uses) != 1 or any(ref["$ref"] == target for ref in _refs(defs[name], [])):
                continue  # used several times, or recursive: it stays a definition
            use = uses[0]
            body = defs.pop(name)
            siblings = {k: v for k, v in use.items() if k != "$ref"}  # e.g. the field's own description
            use.clear()
            use.update({**body, **siblings})
            changed = True
            break
    if not defs:
        schema.pop("$defs", None)
