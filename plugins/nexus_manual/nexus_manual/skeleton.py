"""Smart recommended content: the skeleton an entity created without content starts from.

The sections that entities of the same ``entity_type`` in the library already
use, most common first (ties in the order they usually come), under a title;
a small built-in outline when the library has no entity of that type yet.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field

from nexus_core import ToolError
from nexus_manual import frontmatter
from nexus_manual.library import Library, read_file
from nexus_manual.names import normalize_heading
from nexus_manual.sections import Heading, outline

DEFAULT_SECTIONS = {
    "person": ("Role", "Contact", "Notes"),
    "project": ("Goal", "Status", "Decisions", "Notes"),
    "decision": ("Context", "Decision", "Consequences"),
}
GENERIC_SECTIONS = ("Summary", "Notes")
MAX_SECTIONS = 12
MAX_SAMPLES = 200  # entities of the type read to learn its sections: enough to rank them


@dataclass
class _Tally:
    """How often each section (by normalised heading) appears, and where."""

    samples: int = 0
    uses: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    places: dict[str, float] = field(default_factory=lambda: defaultdict(float))  # sum of relative positions
    spelling: dict[str, str] = field(default_factory=dict)  # the first way it was written

    def add(self, sections: list[str]) -> None:
        self.samples += 1
        unique: dict[str, str] = {}
        for text in sections:
            unique.setdefault(normalize_heading(text), text)
        for i, (key, text) in enumerate(unique.items()):
            self.uses[key] += 1
            self.places[key] += i / len(unique)
            self.spelling.setdefault(key, text)

    def ranked(self) -> list[str]:
        """Sections used by at least a quarter of the samples, most used first, then in their usual order."""
        floor = max(1, -(-self.samples // 4))
        keys = [k for k, n in self.uses.items() if n >= floor]
        keys.sort(key=lambda k: (-self.uses[k], self.places[k] / self.uses[k]))
        return [self.spelling[k] for k in keys[:MAX_SECTIONS]]


def sections_of(headings: list[Heading]) -> list[str]:
    """An entity's sections: the headings under its one title heading, else its top-level headings."""
    if headings and headings[0].level == 1 and sum(h.level == 1 for h in headings) == 1:
        headings = headings[1:]
    if not headings:
        return []
    top = min(h.level for h in headings)
    return [h.text for h in headings if h.level == top]


def learned_sections(lib: Library, names: list[str], entity_type: str) -> list[str]:
    """The sections entities of ``entity_type`` among ``names`` (entities of ``lib``) use, ranked; [] for none."""
    wanted = entity_type.strip().casefold()
    tally = _Tally()
    folder = str(lib.root())
    for name in names:
        if tally.samples >= MAX_SAMPLES:
            break
        data = read_file(os.path.join(folder, f"{name}.md"))
        if data is None:
            continue
        text = data.decode("utf-8", errors="replace")
        parts = frontmatter.split(text)
        if parts.raw is None or wanted not in parts.raw.casefold():
            continue  # cheap filter before parsing YAML
        try:
            data = frontmatter.load(parts.raw, where=f"'{name}'")
        except ToolError:  # broken front matter: this file does not count, the others do
            continue
        if str(data.get("entity_type", "")).strip().casefold() == wanted:
            tally.add(sections_of(outline(text, parts.body_start)))
    return tally.ranked()


def skeleton(title: str, sections: list[str] | tuple[str, ...]) -> str:
    """A body of empty sections under a title heading."""
    return "\n\n".join([f"# {title}", *(f"## {s}" for s in sections)]) + "\n"


def recommended(lib: Library, names: list[str], entity_type: str) -> tuple[list[str], bool]:
    """The sections for a new entity of ``entity_type`` and whether they were learned from the library."""
    found = learned_sections(lib, names, entity_type)
    if found:
        return found, True
    return list(DEFAULT_SECTIONS.get(entity_type.strip().casefold(), GENERIC_SECTIONS)), False
