"""What a model reads of the default tools/list stays small (issue 35): under 12 KB of names, descriptions and
input schemas, counted as bench/tool_bytes.py counts them (compact JSON, UTF-8), through a real ``nexus serve``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import stdio_session, write_config

pytestmark = pytest.mark.anyio

BUDGET = 12_000  # bytes; docs/decisions/tool-schemas.md
# Every first-party plugin with its default grants; the example plugin is not part of a Nexus install.
CONFIG = """[server]
data_dir = "{data}"
roots = ["{files}"]
[plugins.hello]
enabled = false
"""


def size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


async def test_the_default_list_a_model_reads_is_under_12_kb(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    config = write_config(tmp_path / "nexus.toml", CONFIG.format(data=tmp_path / "data", files=tmp_path / "files"))
    async with stdio_session("--standalone", "--config", str(config), cwd=tmp_path) as session:
        tools = (await session.list_tools()).tools
    plugins = {(t.meta or {}).get("nexus/plugin") for t in tools}
    assert {"files", "memory", "graph", "manual"} <= plugins  # the measure covers every first-party plugin
    read = sum(size(t.name) + size(t.description or "") + size(t.input_schema) for t in tools)
    assert read < BUDGET, f"{len(tools)} tools: {read:,} bytes of names, descriptions and input schemas"
    assert not [t.name for t in tools if '{"type": "null"}' in json.dumps(t.input_schema)]  # omitted means none
