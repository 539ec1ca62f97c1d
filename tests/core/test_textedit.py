"""Setting and removing one entry in JSON, JSONC and TOML text, every other byte kept."""

from __future__ import annotations

import tomllib

import pytest

from nexus_core.clients.text_edit import json_remove, json_set, parse_json, toml_remove, toml_set

ENTRY = {"command": "/opt/nexus/bin/nexus", "args": ["serve"]}


@pytest.mark.parametrize(
    ("text", "jsonc", "expected"),
    [
        (  # one line stays one line
            '{"mcpServers": {"a": {"command": "x"}}, "theme": "dark"}',
            False,
            '{"mcpServers": {"a": {"command": "x"}, "nexus": {"command": "/opt/nexus/bin/nexus", "args": ["serve"]}},'
            ' "theme": "dark"}',
        ),
        (  # tabs and CRLF line ends are the file's own
            '{\r\n\t"mcpServers": {\r\n\t\t"a": {"command": "x"}\r\n\t}\r\n}\r\n',
            False,
            '{\r\n\t"mcpServers": {\r\n\t\t"a": {"command": "x"},\r\n\t\t"nexus": {\r\n\t\t\t"command": '
            '"/opt/nexus/bin/nexus",\r\n\t\t\t"args": [\r\n\t\t\t\t"serve"\r\n\t\t\t]\r\n\t\t}\r\n\t}\r\n}\r\n',
        ),
        (  # an empty table opens up; {} again after removal
            '{\n    "mcpServers": {}\n}\n',
            False,
            '{\n    "mcpServers": {\n        "nexus": {\n            "command": "/opt/nexus/bin/nexus",\n'
            '            "args": [\n                "serve"\n            ]\n        }\n    }\n}\n',
        ),
        (  # JSONC: a comment after the last entry stays on its line; trailing commas stay in style
            '{\n  "servers": {\n    "a": 1, // first\n  },\n}\n',
            True,
            '{\n  "servers": {\n    "a": 1, // first\n    "nexus": {\n      "command": "/opt/nexus/bin/nexus",\n'
            '      "args": [\n        "serve"\n      ]\n    },\n  },\n}\n',
        ),
    ],
)
def test_json_entry_added_in_the_files_style_and_removed_to_the_byte(text: str, jsonc: bool, expected: str) -> None:
    table = "servers" if '"servers"' in text else "mcpServers"
    added = json_set(text, table, "nexus", ENTRY, jsonc)
    assert added == expected
    assert json_remove(added, table, "nexus", jsonc) == text


def test_json_table_created_when_missing_and_kept_when_emptied() -> None:
    text = '{\n  "theme": "dark"\n}\n'
    added = json_set(text, "mcpServers", "nexus", ENTRY)
    assert added.startswith('{\n  "theme": "dark",\n  "mcpServers": {\n    "nexus": {\n')
    assert json_remove(added, "mcpServers", "nexus") == '{\n  "theme": "dark",\n  "mcpServers": {}\n}\n'
    assert json_set("", "servers", "nexus", ENTRY) == '{\n  "servers": {\n    "nexus": {\n' + (
        '      "command": "/opt/nexus/bin/nexus",\n      "args": [\n        "serve"\n      ]\n    }\n  }\n}\n'
    )
    assert json_remove(text, "mcpServers", "nexus") is None


def test_json_middle_entry_removed_with_its_comma_and_replaced_in_place() -> None:
    text = '{\n  "mcpServers": {\n    "a": 1,\n    "nexus": {"command": "old"},\n    "b": 2\n  }\n}\n'
    assert json_remove(text, "mcpServers", "nexus") == '{\n  "mcpServers": {\n    "a": 1,\n    "b": 2\n  }\n}\n'
    replaced = json_set(text, "mcpServers", "nexus", ENTRY)
    assert replaced.split('"nexus"')[0] == text.split('"nexus"')[0] and replaced.endswith(
        '      ]\n    },\n    "b": 2\n  }\n}\n'
    )


@pytest.mark.parametrize(
    ("text", "jsonc", "error"),
    [
        ("[1, 2]", False, "the file is not a JSON object"),
        ('{"mcpServers": []}', False, "'mcpServers' is not an object"),
        ('{"mcpServers": {"nexus": 1, "nexus": 2}}', False, "appears twice"),
        ('{"a": 1} x', False, "extra data after the document"),
        ('{"a": /* open', True, "unterminated comment"),
        ('{"a": 1,}', False, "trailing comma"),
    ],
)
def test_json_that_cannot_be_edited_safely_is_refused(text: str, jsonc: bool, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        json_set(text, "mcpServers", "nexus", ENTRY, jsonc)


def test_jsonc_parser_reads_comments_and_strings_that_look_like_them() -> None:
    text = '// head\n{"url": "http://x/*y*/", /* c */ "list": [1, 2,], // tail\n}'
    assert parse_json(text, jsonc=True).value == {"url": "http://x/*y*/", "list": [1, 2]}


CODEX = """model = "gpt-5-codex"

[mcp_servers.a]
command = "a"

[mcp_servers.a.env]
KEY = "v"

# the next table's comment
[profiles.fast]
model = "mini"
"""


def test_toml_table_added_after_the_other_servers_and_removed_to_the_byte() -> None:
    added = toml_set(CODEX, "mcp_servers", "nexus", ENTRY)
    assert added == CODEX.replace(
        "\n# the next", '\n[mcp_servers.nexus]\ncommand = "/opt/nexus/bin/nexus"\nargs = ["serve"]\n\n# the next'
    )
    assert toml_remove(added, "mcp_servers", "nexus") == CODEX
    assert toml_set("", "mcp_servers", "my server", ENTRY).startswith('[mcp_servers."my server"]\n')
    assert toml_remove(CODEX, "mcp_servers", "nexus") is None


def test_toml_entry_replaced_with_its_sub_tables() -> None:
    text = CODEX.replace("[mcp_servers.a", "[mcp_servers.nexus")
    replaced = toml_set(text, "mcp_servers", "nexus", ENTRY)
    assert tomllib.loads(replaced)["mcp_servers"] == {"nexus": ENTRY}
    assert replaced.endswith('args = ["serve"]\n\n# the next table\'s comment\n[profiles.fast]\nmodel = "mini"\n')


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('mcp_servers = { nexus = { command = "x" } }\n', "not written as a \\[mcp_servers.nexus\\] table"),
        ('mcp_servers = { a = { command = "x" } }\n', "cannot be edited safely"),
        ("model = \n", "not valid TOML"),
    ],
)
def test_toml_that_cannot_be_edited_safely_is_refused(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        toml_set(text, "mcp_servers", "nexus", ENTRY)
