"""scripts/mutate's list cannot rot: every mutation's snippet still occurs exactly once in its file.

The mutation run itself takes minutes (see bench/RESULTS.md); this check takes milliseconds.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mutate.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nexus_mutate", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_every_mutation_snippet_occurs_exactly_once_and_names_existing_tests() -> None:
    mutate = load()
    assert mutate.check(mutate.MUTATIONS) == []


def test_mutations_have_unique_ids_and_change_something() -> None:
    mutations = load().MUTATIONS
    ids = [mut.id for mut in mutations]
    assert len(ids) == len(set(ids)) and len(ids) >= 40
    assert all(edit.original != edit.replacement for mut in mutations for edit in mut.edits)


def test_the_check_reports_a_stale_snippet() -> None:
    mutate = load()
    stale = mutate.m("gone", "nexus_core/host/build.py", "no such text", "x", "tests/core/test_host.py", "nothing")
    missing = mutate.m(
        "lost", "nexus_core/host/build.py", "name = self._started.pop()", "x", "tests/nope.py", "nothing"
    )
    assert mutate.check([stale, missing]) == [
        "gone: its snippet occurs 0 times in nexus_core/host/build.py",
        "lost: no test file ['tests/nope.py']",
    ]
