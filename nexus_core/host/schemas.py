"""Tool schemas as short as they stay exact: what pydantic writes that tells a client nothing is left out.

Every client receives every tool's schemas before the user says a word, so each byte counts:

- ``title`` of each model and property: pydantic derives it from the name (``"Start Line"`` for
  ``start_line``);
- a ``$defs`` entry used once: written in place, since a ``$ref`` and its definition cost more;
- in an output schema, ``default``: a result never falls back to one;
- in an input schema, ``"default": null``: a parameter left out of ``required`` already says it may
  be omitted, and the tool then gets None (15 bytes for each optional parameter, 405 in the default list).

The same instances pass and fail as before; names, types, bounds, ``required`` and every other
parameter default are untouched.
"""

from __future__ import annotations

import copy
from typing import Any

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA = ("items", "additionalProperties", "not", "contains")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs")


def compact(schema: dict[str, Any], *, output: bool = False) -> dict[str, Any]:
    schema = copy.deepcopy(schema)
    _inline_single_use_defs(schema)
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
