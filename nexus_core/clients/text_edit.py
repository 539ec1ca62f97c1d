"""One named entry set in or removed from a client's JSON, JSONC or TOML file, by editing its text.

Every other byte of the file stays as it was: comments, key order, indentation,
the way other entries are written. The entry lives at ``TABLE.NAME`` (for
example ``mcpServers.nexus`` or ``[mcp_servers.nexus]``). Each edit is checked
by parsing the result and comparing it with what was asked for; a file this
cannot edit safely is refused with a ``ValueError`` that says why, and nothing
is written.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

Entry = dict[str, Any]

# -- JSON and JSONC -------------------------------------------------------------------------


@dataclass
class Node:
    """A parsed value and where it lies in the text; an object also keeps its members in order."""

    start: int
    end: int
    value: Any
    members: list[Member] = field(default_factory=list)


@dataclass
class Member:
    key: str
    key_start: int
    node: Node


class _Parser:
    """JSON; with ``jsonc``, also comments (``//``, ``/* */``) and trailing commas, as VS Code and Zed allow."""

    _decoder = json.JSONDecoder()

    def __init__(self, text: str, jsonc: bool) -> None:
        self.text, self.jsonc = text, jsonc

    def fail(self, pos: int, message: str) -> ValueError:
        line, column = self.text.count("\n", 0, pos) + 1, pos - self.text.rfind("\n", 0, pos)
        kind = "JSON with comments" if self.jsonc else "JSON"
        return ValueError(f"not valid {kind} (line {line}, column {column}: {message})")

    def skip(self, pos: int) -> int:
        """Past whitespace and (JSONC) comments."""
        text = self.text
        while pos < len(text):
            if text[pos] in " \t\r\n":
                pos += 1
            elif text.startswith(("//", "/*"), pos):
                if not self.jsonc:
                    raise self.fail(pos, "comments are not allowed in this file")
                if text[pos + 1] == "/":
                    end = text.find("\n", pos)
                    pos = len(text) if end == -1 else end
                else:
                    end = text.find("*/", pos + 2)
                    if end == -1:
                        raise self.fail(pos, "unterminated comment")
                    pos = end + 2
            else:
                break
        return pos

    def document(self) -> Node:
        node = self.value(self.skip(0))
        end = self.skip(node.end)
        if end != len(self.text):
            raise self.fail(end, "extra data after the document")
        return node

    def value(self, pos: int) -> Node:
        char = self.text[pos : pos + 1]
        if char == "{":
            return self.container(pos, "}")
        if char == "[":
            return self.container(pos, "]")
        try:
            value, end = self._decoder.raw_decode(self.text, pos)
        except json.JSONDecodeError as exc:
            raise self.fail(exc.pos, exc.msg) from None
        if isinstance(value, dict | list):  # raw_decode only sees scalars here
            raise self.fail(pos, "unexpected value")
        return Node(pos, end, value)

    def container(self, start: int, close: str) -> Node:
        node = Node(start, start, {} if close == "}" else [])
        pos = self.skip(start + 1)
        while self.text[pos : pos + 1] != close:
            if close == "}":
                if self.text[pos : pos + 1] != '"':
                    raise self.fail(pos, "expected a key in double quotes")
                key_node = self.value(pos)
                colon = self.skip(key_node.end)
                if self.text[colon : colon + 1] != ":":
                    raise self.fail(colon, "expected ':'")
                child = self.value(self.skip(colon + 1))
                node.members.append(Member(key_node.value, pos, child))
                node.value[key_node.value] = child.value
            else:
                child = self.value(pos)
                node.value.append(child.value)
            pos = self.skip(child.end)
            if self.text[pos : pos + 1] == ",":
                pos = self.skip(pos + 1)
                if self.text[pos : pos + 1] == close and not self.jsonc:
                    raise self.fail(pos, "trailing comma")
            elif self.text[pos : pos + 1] != close:
                raise self.fail(pos, f"expected ',' or '{close}'")
        node.end = pos + 1
        return node


def parse_json(text: str, jsonc: bool = False) -> Node:
    return _Parser(text, jsonc).document()


_REST_OF_LINE = re.compile(r"[ \t]*(?://[^\n]*|/\*[^\n]*?\*/[ \t]*)?(?:\r?\n|$)")


def json_set(text: str, table: str, name: str, entry: Entry, jsonc: bool = False) -> str:
    """``text`` with ``TABLE.NAME`` set to ``entry``; the table is added when missing."""
    if not text.strip():
        return json.dumps({table: {name: entry}}, indent=2, ensure_ascii=False) + "\n"
    root = parse_json(text, jsonc)
    container, member = _locate(root, table, name)
    style = _Style(text, root)
    if member is not None:
        indent = style.indent_of(member.key_start)
        new = text[: member.node.start] + style.render(entry, indent) + text[member.node.end :]
    elif container is not None:
        new = _insert(text, container, name, entry, style)
    else:
        new = _insert(text, root, table, {name: entry}, style)
    expected = dict(root.value)
    expected[table] = {**expected.get(table, {}), name: entry}
    return _checked(new, expected, jsonc)


def json_remove(text: str, table: str, name: str, jsonc: bool = False) -> str | None:
    """``text`` without ``TABLE.NAME`` (the table itself stays), or None when there is no such entry."""
    if not text.strip():
        return None
    root = parse_json(text, jsonc)
    container, member = _locate(root, table, name)
    if container is None or member is None:
        return None
    index = container.members.index(member)
    cuts = _member_cuts(text, container, index, jsonc)
    new = text
    for start, end in sorted(cuts, reverse=True):
        new = new[:start] + new[end:]
    expected = dict(root.value)
    expected[table] = {k: v for k, v in expected[table].items() if k != name}
    return _checked(new, expected, jsonc)


def _locate(root: Node, table: str, name: str) -> tuple[Node | None, Member | None]:
    if not isinstance(root.value, dict):
        raise ValueError("the file is not a JSON object")
    holder = next((m for m in reversed(root.members) if m.key == table), None)
    if holder is None:
        return None, None
    if not isinstance(holder.node.value, dict):
        raise ValueError(f"'{table}' is not an object")
    if [m.key for m in holder.node.members].count(name) > 1 or [m.key for m in root.members].count(table) > 1:
        raise ValueError(f"'{table}' or '{name}' appears twice; fix the file by hand first")
    return holder.node, next((m for m in holder.node.members if m.key == name), None)


class _Style:
    """How the file is written: its newline, its indentation unit, and whether it is all on one line."""

    def __init__(self, text: str, root: Node) -> None:
        self.text = text
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.compact = "\n" not in text[root.start : root.end]
        first = self.indent_of(root.members[0].key_start) if root.members else None
        self.unit = first or "  "

    def indent_of(self, pos: int) -> str | None:
        """The whitespace before ``pos`` on its line, or None when something else comes first there."""
        prefix = self.text[_line_start(self.text, pos) : pos]
        return prefix if not prefix.strip() else None

    def line_indent(self, pos: int) -> str:
        """The whitespace that starts ``pos``'s line."""
        line = self.text[_line_start(self.text, pos) :]
        return line[: len(line) - len(line.lstrip(" \t"))]

    def render(self, value: Any, indent: str | None) -> str:
        if indent is None or self.compact:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, indent=self.unit, ensure_ascii=False).replace("\n", self.newline + indent)


def _insert(text: str, obj: Node, key: str, value: Any, style: _Style) -> str:
    """A new last member ``"key": value`` of ``obj``, written like its neighbours."""

    def member(indent: str | None) -> str:
        return f"{json.dumps(key, ensure_ascii=False)}: {style.render(value, indent)}"

    if not obj.members:
        close = at = obj.end - 1
        while text[at - 1] in " \t\r\n":
            at -= 1
        if style.compact:
            return text[:at] + member(None) + text[at:]
        closing = style.indent_of(close)
        indent = (style.line_indent(obj.start) if closing is None else closing) + style.unit
        tail = "" if "\n" in text[at:close] else style.newline + (closing or style.line_indent(obj.start))
        return text[:at] + style.newline + indent + member(indent) + tail + text[at:]
    last = obj.members[-1]
    after = _Parser(text, True).skip(last.node.end)
    trailing_comma = text[after] == ","  # JSONC: keep writing it that way
    anchor = after + 1 if trailing_comma else last.node.end
    comma = "" if trailing_comma else ","
    indent = style.indent_of(last.key_start)
    rest = _REST_OF_LINE.match(text, anchor)
    if style.compact or indent is None or rest is None or not rest.group().endswith("\n"):
        return text[:anchor] + f"{comma} {member(None)}" + text[anchor:]
    line_end = rest.end() - (2 if rest.group().endswith("\r\n") else 1)  # after a comment on that line
    new_line = style.newline + indent + member(indent) + ("," if trailing_comma else "")
    return text[:anchor] + comma + text[anchor:line_end] + new_line + text[line_end:]


def _member_cuts(text: str, obj: Node, index: int, jsonc: bool) -> list[tuple[int, int]]:
    """The spans to delete so that member ``index`` goes, with exactly one of the commas around it."""
    member = obj.members[index]
    start, end = member.key_start, member.node.end
    skip = _Parser(text, jsonc).skip
    after = skip(end)
    line_start = _line_start(text, start)
    alone = not text[line_start:start].strip()  # nothing before it on its line
    if text[after] == ",":  # a comma follows: it goes with the member
        rest = _REST_OF_LINE.match(text, after + 1)
        if alone and rest and rest.group().endswith("\n"):
            return [(line_start, rest.end())]
        stop = after + 1
        while text[stop : stop + 1] in (" ", "\t"):
            stop += 1
        return [(start, stop)]
    rest = _REST_OF_LINE.match(text, end)
    whole_line = alone and rest is not None and rest.group().endswith("\n")
    if index == 0:
        inside = text[obj.start + 1 : start] + text[end : obj.end - 1]
        if not inside.strip():  # it was all there was: the object becomes {} again
            return [(obj.start + 1, obj.end - 1)]
        return [(line_start, rest.end())] if whole_line and rest else [(start, end)]
    comma = skip(obj.members[index - 1].node.end)  # the last member: the comma before it goes
    return [(comma, comma + 1), (line_start, rest.end())] if whole_line and rest else [(comma, end)]


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _checked(new: str, expected: Any, jsonc: bool) -> str:
    try:
        ok = parse_json(new, jsonc).value == expected
    except ValueError:
        ok = False
    if not ok:
        raise ValueError("this file is written in a way that cannot be edited safely; edit it by hand")
    return new


# -- TOML -----------------------------------------------------------------------------------

_HEADER = re.compile(r"^[ \t]*\[\[?([^\[\]\n]+)\]\]?[ \t]*(?:#[^\n]*)?\r?$")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_set(text: str, table: str, name: str, entry: Entry) -> str:
    """``text`` with the table ``[TABLE.NAME]`` holding ``entry`` (replaced, or added at the end)."""
    data = _toml(text)
    newline = "\r\n" if "\r\n" in text else "\n"
    block = _toml_block(table, name, entry, newline)
    lines = text.splitlines(keepends=True)
    found = _toml_region(lines, table, name)
    if found is not None:
        start, end = found
        new = "".join(lines[:start]) + block + "".join(lines[end:])
    elif name in data.get(table, {}):
        raise ValueError(f"{table}.{name} is not written as a [{table}.{name}] table here; edit it by hand")
    elif (end := _tables_end(lines, table)) is not None:  # after the last server, with the others
        new = "".join(lines[:end]) + newline + block + "".join(lines[end:])
    else:
        new = text + ("" if not text else (newline if text.endswith("\n") else newline * 2)) + block
    expected = dict(data)
    expected[table] = {**data.get(table, {}), name: entry}
    return _toml_checked(new, expected)


def toml_remove(text: str, table: str, name: str) -> str | None:
    """``text`` without ``[TABLE.NAME]`` and its sub-tables, or None when it has no such table."""
    data = _toml(text)
    lines = text.splitlines(keepends=True)
    found = _toml_region(lines, table, name)
    if found is None:
        if name in data.get(table, {}):
            raise ValueError(f"{table}.{name} is not written as a [{table}.{name}] table here; edit it by hand")
        return None
    start, end = found
    if start > 0 and not lines[start - 1].strip():
        start -= 1  # the blank line that separated it from what came before
    new = "".join(lines[:start] + lines[end:])
    expected = dict(data)
    expected[table] = {k: v for k, v in data[table].items() if k != name}
    return _toml_checked(new, expected)


def _toml(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML ({exc})") from None


def _toml_block(table: str, name: str, entry: Entry, newline: str) -> str:
    key = name if _BARE_KEY.match(name) else _toml_string(name)
    lines = [f"[{table}.{key}]"] + [f"{k} = {_toml_value(v)}" for k, v in entry.items()]
    return newline.join(lines) + newline


def _toml_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return _toml_string(value)
    raise TypeError(f"cannot write {value!r} as TOML here")


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")  # DEL must be escaped in TOML


def _header_path(line: str) -> tuple[str, ...] | None:
    match = _HEADER.match(line.rstrip("\n"))
    if match is None:
        return None
    try:
        data = tomllib.loads(f"{match.group(1)} = 0")
    except tomllib.TOMLDecodeError:
        return ()  # a header this cannot read: it ends any region before it
    path: list[str] = []
    while isinstance(data, dict):
        (key, data) = next(iter(data.items()))
        path.append(key)
    return tuple(path)


def _toml_region(lines: list[str], table: str, name: str) -> tuple[int, int] | None:
    """The lines ``[start, end)`` of ``[TABLE.NAME]`` and its sub-tables, without comments that lead the next."""
    ours = (table, name)
    start = None
    for i, line in enumerate(lines):
        path = _header_path(line)
        if path is None:
            continue
        if start is None and path == ours:
            start = i
        elif start is not None and path[:2] != ours:
            end = i
            break
    else:
        end = len(lines)
    if start is None:
        return None
    while end - 1 > start and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return start, end


def _tables_end(lines: list[str], table: str) -> int | None:
    """Where the last ``[TABLE.X]`` table (with its sub-tables) ends, or None when there is none."""
    names = [path[1] for line in lines if (path := _header_path(line)) and len(path) > 1 and path[0] == table]
    region = _toml_region(lines, table, names[-1]) if names else None
    return region[1] if region else None


def _toml_checked(new: str, expected: dict[str, Any]) -> str:
    try:
        ok = tomllib.loads(new) == expected
    except tomllib.TOMLDecodeError:
        ok = False
    if not ok:
        raise ValueError("this file is written in a way that cannot be edited safely; edit it by hand")
    return new
