"""The execute category: allowlist, denylist, parsing refusals, timeouts, scrubbed environment."""

from __future__ import annotations

import os
import time

import pytest

from tests.files.helpers import call, fail, survivors

pytestmark = pytest.mark.anyio

EXEC = ["read", "execute"]


async def test_execute_category_is_off_by_default(files_client):
    async with files_client() as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert not names & {"run_command", "run_python"}
        assert "'execute' category" in await fail(client, "run_command", command="echo hi")


async def test_empty_allowlist_refuses_with_the_fix(files_client):
    async with files_client(categories=EXEC) as client:
        message = await fail(client, "run_command", command="echo hi")
        assert "allowed_commands" in message and "'echo'" in message


async def test_allowed_commands_run_in_the_users_shell(files_client, repo):
    async with files_client(categories=EXEC, allowed_commands=["echo", "ls", "wc", "pwd", "cat"]) as client:
        result = await call(client, "run_command", command="ls src | wc -l && echo done")
        assert result["stdout"].split() == ["2", "done"] and result["exit_code"] == 0
        assert os.path.basename(result["shell"]) in ("bash", "sh", "zsh", "dash")
        inside = await call(client, "run_command", command="pwd", cwd="src/pkg")
        assert inside["stdout"].strip() == str(repo / "src" / "pkg") and inside["cwd"] == "src/pkg"
        failing = await call(client, "run_command", command="cat missing-file")
        assert failing["exit_code"] != 0 and "missing-file" in failing["stderr"]


async def test_refusals_name_the_reason(files_client, outside):
    allowed = ["echo", "ls", "cat", "nice", "rm"]
    async with files_client(categories=EXEC, allowed_commands=allowed) as client:
        assert "'grep' is not in allowed_commands" in await fail(client, "run_command", command="ls | grep x")
        assert "'rm' is in denied_commands" in await fail(client, "run_command", command="echo x; rm -rf src")
        assert "'rm' is in denied_commands" in await fail(client, "run_command", command="nice -n 5 /bin/rm x")
        assert "newlines are not allowed" in await fail(client, "run_command", command="ls\npython3 -c 1")
        assert "command substitution" in await fail(client, "run_command", command="echo $(whoami)")
        assert "command substitution" in await fail(client, "run_command", command="echo `id`")
        assert "expansions ('$')" in await fail(client, "run_command", command="$CMD x")
        assert "outside the allowed roots" in await fail(client, "run_command", command=f"echo x > {outside}/pwned.txt")
        assert "deny_paths" in await fail(client, "run_command", command="cat < .env")
        assert "outside the allowed roots" in await fail(client, "run_command", command="ls", cwd=str(outside))
        assert "symlink" in await fail(client, "run_command", command="ls", cwd="escape_dir")
    assert not (outside / "pwned.txt").exists()


async def test_timeout_kills_the_process_group(files_client, repo):
    duration = "30.2719"  # tells this test's sleeps from any other process
    command = f"echo started; sleep {duration} | sleep {duration}"
    async with files_client(categories=EXEC, allowed_commands=["sleep", "echo"], command_timeout=5) as client:
        message = await fail(client, "run_command", command=command, timeout=0.5)
        assert "timed out after 0.5 s" in message and "started" in message
    assert survivors(duration) == []  # both sleeps died with the group, not 30 s later


async def test_environment_is_scrubbed_of_secrets(files_client, monkeypatch):
    monkeypatch.setenv("MY_API_TOKEN", "s3cret-token")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-key")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    async with files_client(categories=EXEC, allowed_commands=["printenv"], pass_env=["HARMLESS_SETTING"]) as client:
        result = await call(client, "run_command", command="printenv")
        assert "visible" in result["stdout"]
        assert "s3cret-token" not in result["stdout"] and "aws-key" not in result["stdout"]


async def test_output_is_capped(files_client):
    async with files_client(categories=EXEC, allowed_commands=["seq"], max_output_bytes=1000) as client:
        result = await call(client, "run_command", command="seq 1 100000")
        assert result["truncated"] and len(result["stdout"]) == 1000 and result["exit_code"] == 0


async def test_execute_grants_run_python_as_the_design_has_it_and_python_stays_a_finer_grant(files_client):
    """001 puts bash_safe and run_python in execute; ``python`` alone still grants run_python only."""
    async with files_client(categories=EXEC) as client:
        assert {"bash_safe", "run_command", "run_python"} <= {t.name for t in (await client.list_tools()).tools}
        assert (await call(client, "run_python", code="print(6 * 7)"))["stdout"] == "42\n"
    async with files_client(categories=["read", "python"]) as client:
        assert (await call(client, "run_python", code="print(1)"))["exit_code"] == 0
        assert "'execute' category" in await fail(client, "bash_safe", command="ls")
    async with files_client(categories=EXEC, deny_tools=["run_python"]) as client:
        assert "deny_tools" in await fail(client, "run_python", code="print(1)")


async def test_run_python(files_client, repo, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    async with files_client(categories=["read", "python"]) as client:
        code = "import os, sys\nprint(os.getcwd())\nprint(os.environ.get('GITHUB_TOKEN'))\nsys.exit(3)\n"
        result = await call(client, "run_python", code=code, cwd="src")
        assert result["stdout"].split() == [str(repo / "src"), "None"] and result["exit_code"] == 3
        message = await fail(
            client, "run_python", code="import time\nprint('begin', flush=True)\ntime.sleep(30)", timeout=1
        )
        assert "timed out" in message and "begin" in message
        error = await call(client, "run_python", code="raise ValueError('boom')")
        assert error["exit_code"] == 1 and "ValueError: boom" in error["stderr"]


@pytest.mark.parametrize("tool", ["bash_safe", "run_command", "run_python"])
async def test_a_longer_timeout_than_command_timeout_is_cut_to_it(files_client, tool):
    """A call may ask for less time than the config allows, never more."""
    duration = "6.4417"  # longer than the cap, and tells this test's sleep from any other process
    code = {"command": f"sleep {duration}"}
    if tool == "run_python":
        code = {"code": f"import subprocess\nsubprocess.run(['sleep', '{duration}'])"}
    async with files_client(
        categories=["read", "execute", "python"], allowed_commands=["sleep"], command_timeout=1
    ) as client:
        started = time.monotonic()
        message = await fail(client, tool, **code, timeout=3600)
        assert "timed out after 1.0 s" in message and time.monotonic() - started < 5
    assert survivors(duration) == []
