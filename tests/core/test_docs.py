"""docs/plugin_hooks.md has one section per hook, headed by its exact signature."""

from __future__ import annotations

import re
from pathlib import Path

from nexus_core.host.discovery import get_plugin_manager

DOCS = Path(__file__).parents[2] / "docs" / "plugin_hooks.md"


def test_every_hook_is_documented_with_its_signature() -> None:
    headings = set(re.findall(r"^## (nexus_\w+\(.*\))$", DOCS.read_text(), flags=re.MULTILINE))
    hooks = get_plugin_manager().hook
    expected = {
        f"{name}({', '.join(getattr(hooks, name).spec.argnames)})" for name in dir(hooks) if name.startswith("nexus_")
    }
    assert expected, "no hook specs found"
    assert expected - headings == set(), "hooks without a section in docs/plugin_hooks.md"
    assert headings - expected == set(), "sections for hooks that do not exist (or with stale signatures)"


def test_every_hook_spec_has_a_docstring_with_its_parameters() -> None:
    hooks = get_plugin_manager().hook
    for name in (n for n in dir(hooks) if n.startswith("nexus_")):
        spec = getattr(hooks, name).spec
        doc = spec.function.__doc__ or ""
        assert doc.strip(), f"{name} has no docstring"
        for arg in spec.argnames:
            assert f":param {arg}:" in doc, f"{name} does not document {arg}"
