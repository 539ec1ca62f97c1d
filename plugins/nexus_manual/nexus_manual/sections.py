"""Headings and sections, found with a real CommonMark parser, and the exact-context edit primitives.

A section starts at its heading line and runs to the next heading of the same
or a higher level (fewer ``#``), or to the end of the file. Only top-level
headings count: a ``#`` line inside a code fence, a block quote or a list is
not a section boundary. All offsets are character offsets in the whole file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from nexus_core import ToolError
from nexus_manual.names import compile_globs, normalize_heading, snippet


@dataclass(frozen=True)
class Heading:
    text: str
    level: int
    start: int  # first character of the heading line
    body_start: int  # first character after the heading line(s)
    end: int  # where the section ends (next heading of the same or a higher level, or EOF)
    own_end: int  # where its own text ends (its first subsection, or ``end``)
    key: str  # the text as compared: normalize_heading(text)


class MatchError(ToolError):
    """An exact text matched zero or several times: nothing was changed."""


@cache
def _parser() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    md.disable("inline")  # headings' raw text is all we need; inline parsing is most of the cost
    return md


def outline(text: str, body_start: int = 0) -> list[Heading]:
    """Every top-level heading of ``text[body_start:]``, with its section's extent."""
    body = text[body_start:]
    if "#" not in body and "=" not in body and "-" not in body:
        return []  # no heading possible: skip the parser
    line_starts = [0, *(m.end() for m in re.finditer("\n", body))]
    found: list[tuple[str, int, int, int]] = []
    tokens = _parser().parse(body)
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open" or tok.level != 0 or tok.map is None:
            continue
        first, after = tok.map
        start = body_start + line_starts[first]
        stop = body_start + (line_starts[after] if after < len(line_starts) else len(body))
        found.append((tokens[i + 1].content.strip(), int(tok.tag[1:]), start, stop))
    return _extents(found, len(text))


def _extents(found: list[tuple[str, int, int, int]], length: int) -> list[Heading]:
    # Each section ends where the next heading of its level or higher starts: one pass with a stack of the
    # sections still open, so 100k headings take milliseconds (looking ahead from each was quadratic).
    ends = [length] * len(found)
    open_: list[int] = []
    for i, (_, level, start, _) in enumerate(found):
        while open_ and found[open_[-1]][1] >= level:
            ends[open_.pop()] = start
        open_.append(i)
    headings = []
    for i, (text, level, start, body_start) in enumerate(found):
        end = ends[i]
        own_end = found[i + 1][2] if i + 1 < len(found) and found[i + 1][2] < end else end
        headings.append(Heading(text, level, start, body_start, end, own_end, normalize_heading(text)))
    return headings


def sections_named(headings: list[Heading], wanted: str) -> list[Heading]:
    key = normalize_heading(wanted)
    if not key:
        raise ToolError("the section heading is empty")
    return [h for h in headings if h.key == key]


def find_section(headings: list[Heading], wanted: str, where: str) -> Heading:
    """The one heading whose normalised text equals ``wanted``'s; ToolError when none or several."""
    hits = sections_named(headings, wanted)
    if len(hits) == 1:
        return hits[0]
    if not hits:
        known = ", ".join(f"'{h.text}'" for h in headings[:30]) or "none"
        raise ToolError(f"{where} has no section '{wanted}' (its headings: {known})")
    raise ToolError(
        f"{where} has {len(hits)} sections headed '{wanted}'; rename one of them with replace_entity_section "
        "or edit the whole file"
    )


def matching_sections(headings: list[Heading], globs: list[str]) -> list[Heading]:
    pattern = compile_globs(globs)
    return [h for h in headings if pattern.match(h.key)]


def occurrences(haystack: str, needle: str, start: int, end: int) -> list[int]:
    """Offsets (overlaps included) where ``needle`` occurs inside ``haystack[start:end]``."""
    hits, pos = [], haystack.find(needle, start, end)
    while pos >= 0:
        hits.append(pos)
        pos = haystack.find(needle, pos + 1, end)
    return hits


def locate_once(text: str, needle: str, start: int, end: int, where: str) -> int:
    """The offset of the single occurrence of ``needle`` in ``text[start:end]``; MatchError otherwise."""
    if not needle:
        raise ToolError("the exact text to look for is empty")
    hits = occurrences(text, needle, start, end)
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise MatchError(
            f"'{snippet(needle)}' matches 0 times in {where}; nothing changed. "
            "Copy the exact text (spaces and line breaks included) from a read tool."
        )
    lines = ", ".join(str(text.count("\n", 0, h) + 1) for h in hits[:10])
    raise MatchError(
        f"'{snippet(needle)}' matches {len(hits)} times in {where} (lines {lines}); nothing changed. "
        "Include more surrounding text so it matches exactly once."
    )


@dataclass(frozen=True)
class Splice:
    """An edit of a text: ``text[start:end]`` becomes ``new``."""

    start: int
    end: int
    new: str

    def apply(self, text: str) -> str:
        return text[: self.start] + self.new + text[self.end :]


def line_breaks_as_in(text: str, given: str) -> str:
    """``given`` with CRLF line breaks as LF when ``text`` has none (a CRLF file is edited as LF, see
    ``Library.edit``): text copied from a read tool still matches."""
    return given if "\r" in text else given.replace("\r\n", "\n")


def replace_exact(text: str, old: str, new: str, start: int, end: int, where: str) -> Splice:
    old = line_breaks_as_in(text, old)
    pos = locate_once(text, old, start, end, where)
    return Splice(pos, pos + len(old), new)


def insert_after(text: str, context: str, content: str, start: int, end: int, where: str) -> Splice:
    """Insert ``content`` right after the one occurrence of ``context``.

    When the context ends a line, the content goes on the next line(s) instead
    of being glued to it.
    """
    context = line_breaks_as_in(text, context)
    pos = locate_once(text, context, start, end, where) + len(context)
    if (pos == len(text) or text[pos] == "\n") and not context.endswith("\n") and not content.startswith("\n"):
        content = "\n" + content.rstrip("\n")
    return Splice(pos, pos, content)


_LIST_ITEM = re.compile(r"^ {0,3}([-*+]|\d{1,9}[.)])[ \t]")


def _list_marker(line: str) -> str | None:
    """The kind of list item ``line`` starts ('-', '*', '+', '.' or ')'), or None when it starts none."""
    found = _LIST_ITEM.match(line)
    return None if found is None else found.group(1)[-1]


def _last_item(text: str) -> str | None:
    """The kind of list item ``text`` ends in, its last item going on over indented lines (a wrapped item, a
    nested block), or None when it ends in no list item."""
    for line in reversed(text.split("\n")):
        if (kind := _list_marker(line)) is not None:
            return kind
        if not line.strip() or not line[0].isspace():
            return None
    return None


def append_block(text: str, pos: int, content: str) -> Splice:
    """Insert ``content`` as its own Markdown block at ``pos``: a blank line before it and, when more follows, after."""
    block = content.strip("\n")
    if not block:
        raise ToolError("the content to add is empty")
    start = len(text[:pos].rstrip("\n"))
    end = pos + len(text[pos:]) - len(text[pos:].lstrip("\n"))
    # An item added to a list ends it as one more item: a blank line between them would make a tight list loose.
    last = _last_item(text[:start])
    same_list = last is not None and last == _list_marker(block.split("\n", 1)[0])
    lead = "\n" if same_list else "\n\n" if start else ""
    tail = "\n\n" if text[end:].strip() else "\n"
    return Splice(start, end, lead + block + tail)


# -- blank lines ----------------------------------------------------------------------

_BLANK_RUN = re.compile(r"\n(?:[ \t]*\n){2,}")  # two or more blank lines
_TRAILING_BLANKS = re.compile(r"(?:\n[ \t]*)+\Z")
_VERBATIM = {"fence", "code_block", "html_block"}  # blocks whose blank lines are content


def edit(text: str, headings: list[Heading], body_start: int, splice: Splice) -> str:
    """``text`` with ``splice`` applied, the blank lines around it normalised.

    The span normalised runs from the heading before the edit to the heading after
    it (in the text before the edit): blank lines there are collapsed to one, and
    at the end of the file to none, so repeated edits never pile them up. The rest
    of the file is left exactly as it was.
    """
    lo = max((h.start for h in headings if h.start < splice.start), default=body_start)
    hi = min((h.start for h in headings if h.start > splice.end), default=len(text))
    out = splice.apply(text)
    hi += len(out) - len(text)
    return out[:lo] + tidy_blank_lines(out[lo:hi], at_end=hi == len(out)) + out[hi:]


def tidy_blank_lines(block: str, *, at_end: bool) -> str:
    """``block`` (whole lines, from a heading or the body's start) with runs of blank lines collapsed to one.

    Blank lines inside code fences, indented code and HTML blocks are content and kept.
    At the end of the file, trailing blank lines are dropped and one newline ends it.
    """
    if at_end:
        block = _TRAILING_BLANKS.sub("", block)
        block = block + "\n" if block else ""
    runs = list(_BLANK_RUN.finditer(block))
    if not runs:
        return block
    verbatim = [range(*tok.map) for tok in _parser().parse(block) if tok.type in _VERBATIM and tok.map]
    out, pos = [], 0
    for run in runs:
        first_blank = block.count("\n", 0, run.start()) + 1  # the line index of the run's first blank line
        if any(first_blank in lines for lines in verbatim):
            continue
        out += [block[pos : run.start()], "\n\n"]
        pos = run.end()
    return "".join(out) + block[pos:]
