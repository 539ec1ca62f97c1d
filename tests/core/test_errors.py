"""Clear errors: bad arguments named in one line, and requests before the handshake told so."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mcp import Client

from tests.conftest import nexus_command, server_env, write_config
from tests.core.fakes import Calculator

pytestmark = pytest.mark.anyio


async def test_bad_arguments_say_which_and_why_in_one_line(make_host) -> None:
    host = make_host({"calc": Calculator()})
    async with Client(host.server) as client:
        result = await client.call_tool("add", {"a": "seven", "b": -1})
        text = result.content[0].text  # type: ignore[union-attr]
        missing = (await client.call_tool("add", {"b": 1})).content[0].text  # type: ignore[union-attr]
    assert result.is_error
    assert text == "invalid arguments for add: a must be an integer, got 'seven'; b must be at least 0, got -1"
    assert missing == "invalid arguments for add: a is required"
    assert "\n" not in text and "pydantic" not in text


async def test_an_unknown_argument_is_named_with_the_closest_known_one(make_host) -> None:
    host = make_host({"calc": Calculator()})
    async with Client(host.server) as client:
        wrong = (await client.call_tool("add", {"aa": 1, "b": 1})).content[0].text  # type: ignore[union-attr]
    assert wrong == (
        "invalid arguments for add: 'aa' is not an argument of this tool (did you mean 'a'?); a is required"
    )


async def test_a_valid_call_with_a_key_the_tool_does_not_take_is_refused_not_run(make_host) -> None:
    host = make_host({"calc": Calculator()})
    async with Client(host.server) as client:
        typo = await client.call_tool("add", {"a": 1, "b": 2, "bb": 3})
        right = await client.call_tool("add", {"a": 1, "b": 2})
    assert typo.is_error  # not silently dropped: the caller meant something by it
    assert typo.content[0].text == (  # type: ignore[union-attr]
        "invalid arguments for add: 'bb' is not an argument of this tool (did you mean 'b'?)"
    )
    assert not right.is_error and right.structured_content == {"total": 3}


@pytest.mark.parametrize("mode", ["relay", "standalone"])
def test_a_request_before_initialize_is_told_so(tmp_path: Path, mode: str) -> None:
    config = write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path / "data"}"\n')
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 2, "method": "no/such"}]
    proc = subprocess.Popen(
        nexus_command("serve", "--config", str(config), *(["--standalone"] if mode == "standalone" else [])),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(),
        cwd=tmp_path,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(line) + "\n" for line in lines).encode())
    proc.stdin.flush()
    replies = {}
    while len(replies) < 2:  # stdin stays open until both answers are in
        reply = json.loads(proc.stdout.readline())
        replies[reply["id"]] = reply
    proc.stdin.close()
    proc.wait(timeout=60)
    assert "arrived before initialize: send initialize" in replies[1]["error"]["message"]
    assert replies[2]["error"]["code"] == -32601
