"""The [plugins.bridge] table: mistakes are refused at startup with a message naming the key."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from typing import Any

import pytest

import nexus_bridge
from nexus_bridge.config import BridgeConfig
from nexus_core import PluginError
from nexus_core.host.build import Host


def build(make_host: Callable[..., Host], servers: dict[str, Any]) -> Host:
    return make_host({"bridge": nexus_bridge}, {"plugins": {"bridge": {"required": True, "servers": servers}}})


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ({"fs": {"type": "stdio"}}, "type = 'stdio' needs command"),
        ({"fs": {"type": "npm", "command": "node", "package": "x"}}, "command does not apply to type = 'npm'"),
        ({"fs": {"type": "http", "url": "http://h/mcp", "args": ["x"]}}, "args does not apply to type = 'http'"),
        ({"fs": {"type": "http", "url": "ftp://h"}}, "servers.fs.url"),
        ({"fs": {"type": "ftp", "url": "http://h"}}, "servers.fs.type"),
        ({"fs": {"type": "stdio", "command": "x", "retry": 3}}, "servers.fs.retry"),
        (
            {"fs": {"type": "http", "url": "http://h/mcp", "headers": {"Authorization": "Bearer abc"}}},
            'header Authorization carries a credential: write Authorization = { env = "VARIABLE" }',
        ),
        (
            {
                "a": {"type": "stdio", "command": "x", "prefix": "p"},
                "b": {"type": "stdio", "command": "y", "prefix": "p"},
            },
            "servers 'a' and 'b' have the same prefix 'p'",
        ),
        ({"1st": {"type": "stdio", "command": "x"}}, "server name '1st' must start with a letter"),
    ],
)
def test_mistakes_are_refused_with_the_key(
    make_host: Callable[..., Host], servers: dict[str, Any], message: str
) -> None:
    with pytest.raises(PluginError) as caught:
        build(make_host, servers)
    assert message in str(caught.value)


def test_a_good_table_builds(make_host: Callable[..., Host]) -> None:
    servers = {
        "fs": {"type": "stdio", "command": "node", "args": ["server.js"], "env": {"KEY": {"env": "FS_KEY"}}},
        "kg": {"type": "npm", "package": "@modelcontextprotocol/server-memory"},
        "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": {"env": "T"}}},
        "old": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"X-Client": "nexus"}, "prefix": ""},
    }
    host = build(make_host, servers)
    assert host.plugins["bridge"].status == "ok"
    assert sorted(host.plugins["bridge"].ctx.config.servers) == ["fs", "kg", "old", "web"]  # type: ignore[union-attr]


def test_the_sample_nexus_config_init_writes_is_a_valid_table() -> None:
    table = tomllib.loads("[plugins.bridge]\n" + BridgeConfig.SAMPLE)["plugins"]["bridge"]
    assert sorted(BridgeConfig.model_validate(table).servers) == ["memory", "search"]
