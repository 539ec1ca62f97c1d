"""run_command against hostile command lines: every bypass found in review is refused and changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.files.helpers import call, fail

pytestmark = pytest.mark.anyio

EXEC = ["read", "execute"]
ALLOWED = ["ls", "cat", "echo", "git", "true", "printenv", "sleep", "find", "wc", "nice"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway HOME, so an attack on ~ could only ever touch the test's folder."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def victim(outside: Path) -> Path:
    """A file outside the roots that the attacks try to delete."""
    path = outside / "victim"
    path.write_text("still here\n")
    return path


# (command template, the reason the refusal must give); {victim}, {target} and {marker} are outside the roots.
SYNTAX_ATTACKS = [
    ("echo hi;(rm -f {victim})", "subshells, grouping"),
    ("echo hi&&(rm -f {victim})", "subshells, grouping"),
    ("echo hi\n\nrm -f {victim}", "newlines are not allowed"),
    ("echo hi\r\nrm -f {victim}", "newlines are not allowed"),
    ("ls() {{ rm -f {victim}; }}; ls", "subshells, grouping"),
    ("{{ rm -f {victim}; }}", "grouping and brace expansion"),
    ("(echo pwned)>{target}", "subshells, grouping"),
    ("echo hi;>{target}", "the operator ';>' is not supported"),
    ("echo hi;;rm -f {victim}", "the operator ';;' is not supported"),
    ("echo hi |& rm -f {victim}", "the operator '|&' is not supported"),
    ("echo pwned &>{target}", "the operator '&>' is not supported"),
    ("echo pwned >|{target}", "the operator '>|' is not supported"),
    ("cat <<EOF", "the operator '<<' is not supported"),
    ("echo `rm -f {victim}`", "command substitution"),
    ("echo $(rm -f {victim})", "command substitution"),
    ('echo "$(rm -f {victim})"', "command substitution"),
    ("echo $'\\x41'", "expansions ('$')"),
    ("echo pwned > $HOME/x", "expansions ('$')"),
    ("echo pwned > ~/x", "must be a plain file name"),
    ("echo pwned > '{target}'", "must be a plain file name"),
    ("echo pwned > \\{target}", "must be a plain file name"),
    ("echo pwned > *.txt", "must be a plain file name"),
    ("echo pwned >{target}", "outside the allowed roots"),
    ("echo pwned 2>{target}", "outside the allowed roots"),
    ("echo pwned >>../outside/victim", "outside the allowed roots"),
    ("echo x >&{target}", "must be followed by a file descriptor number"),
    ("PATH=. ls", "variable assignments"),
    ("LD_PRELOAD=./evil.so ls", "variable assignments"),
    ("if true; then rm -f {victim}; fi", "shell keyword 'if'"),
    ("! rm -f {victim}", "shell keyword '!'"),
    ("cd .. && cat outside/victim", "'cd' changes the shell itself"),
    ("alias ls=rm; ls {victim}", "'alias' changes the shell itself"),
    ("echo hi # comment", "comments ('#')"),
    ("ls\u00a0-la /", "U+00A0"),
    ("ls\u2028rm -f {victim}", "U+2028"),
    ("echo hi | ", "ends with '|'"),
    ("; ls", "empty command before ';'"),
    ("nice -n 5 rm -f {victim}", "'rm' is in denied_commands"),
    ("echo hi && /bin/rm -f {victim}", "'rm' is in denied_commands"),
    ("./ls", "is not the 'ls' found on PATH"),
    ("l? .", "is not literal"),
]


@pytest.mark.parametrize(("template", "reason"), SYNTAX_ATTACKS, ids=[a[0][:40] for a in SYNTAX_ATTACKS])
async def test_shell_syntax_bypasses_are_refused(files_client, repo, home, victim, outside, template, reason):
    target = outside / "created"
    command = template.format(victim=victim, target=target)
    async with files_client(categories=EXEC, allowed_commands=ALLOWED) as client:
        message = await fail(client, "run_command", command=command)
    assert reason in message, message
    assert message.startswith("refused") or "refused:" in message
    assert victim.read_text() == "still here\n"
    assert not target.exists() and not (home / "x").exists()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt", "victim"]


@pytest.fixture
def secrets(repo: Path) -> Path:
    """Deny-listed files next to ordinary ones: .env, secrets/, *.pem."""
    (repo / "secrets").mkdir()
    (repo / "secrets" / "key.txt").write_text("SECRET-KEY-123\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "id.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    return repo


ARGUMENT_ATTACKS = [
    # (command, cwd, reason)
    ("cat .env secrets/key.txt sub/id.pem /etc/hostname", ".", "deny_paths"),
    ("cat README.md secrets/key.txt", ".", "deny_paths pattern 'secrets/'"),
    ("cat sub/id.pem", ".", "deny_paths pattern '**/*.pem'"),
    ("cat id.pem", "sub", "deny_paths pattern '**/*.pem'"),
    ("cat /etc/hostname", ".", "outside the allowed roots"),
    ("ls -la /", ".", "outside the allowed roots"),
    ("ls ..", ".", "outside the allowed roots"),
    ("cat ../outside/secret.txt", ".", "outside the allowed roots"),
    ("cat escape", ".", "symlink"),
    ("cat ~/.ssh/id_rsa", ".", "outside the allowed roots"),
    ("cat ~", ".", "outside the allowed roots"),
    ("cat ~root/x", ".", "unquoted '~' here may be expanded"),
    ("cat HEAD~1", ".", "unquoted '~' here may be expanded"),
    ("cat --file=/etc/hostname", ".", "'cat' has no option --file"),
    ("cat -o/etc/hostname", ".", "'cat' has no option -o"),
    ("cat .e*", ".", "would match a file the path policy refuses"),
    ("cat .en?", ".", "would match a file the path policy refuses"),
    ("cat sub/*.p?m", ".", "would match a file the path policy refuses"),
    ("cat sub/id.p[e]m", ".", "would match a file the path policy refuses"),
    ("cat */id.pem", ".", "deny_paths"),
    ("cat **/*.pem", ".", "deny_paths"),
    ("cat s*/key.txt", ".", "would match a file the path policy refuses"),
    ("cat /etc/host*", ".", "outside the allowed roots"),
    ("cat ../*/secret.txt", ".", "outside the allowed roots"),
    ("wc < .env", ".", "deny_paths"),
    ("echo x > .git/config", ".", "writes there are refused"),
    ("find . -exec cat {{}} +", ".", "grouping and brace expansion"),
    ("find . -name x -exec cat \\;", ".", "'find -exec' runs a program"),
    ("find . -delete", ".", "'find -delete' deletes what it finds"),
    ("git -c alias.x='!touch {marker}' x", ".", "'git' is in denied_commands"),
    ("git status", ".", "'git' is in denied_commands"),
]


@pytest.mark.parametrize(("command", "cwd", "reason"), ARGUMENT_ATTACKS, ids=[a[0][:40] for a in ARGUMENT_ATTACKS])
async def test_arguments_of_allowed_commands_are_path_checked(
    files_client, secrets, outside, home, tmp_path, command, cwd, reason
):
    marker = tmp_path / "MARKER"
    deny = ["**/.env", "**/*.pem", "secrets/"]
    async with files_client(categories=EXEC, allowed_commands=ALLOWED, deny_paths=deny) as client:
        result = await client.call_tool("run_command", {"command": command.format(marker=marker), "cwd": cwd})
    text = result.content[0].text
    assert result.is_error, text
    assert reason in text, text
    for secret in ("hunter2", "SECRET-KEY-123", "PRIVATE KEY", "top secret"):
        assert secret not in text
    assert not marker.exists()
    assert (secrets / ".git" / "config").read_text().startswith("[core]")


async def test_ordinary_commands_still_run(files_client, secrets):
    allowed = ["ls", "cat", "echo", "wc", "find", "true", "sort"]
    async with files_client(categories=EXEC, allowed_commands=allowed) as client:
        listed = await call(client, "run_command", command="ls src 2>/dev/null | sort && echo 'done $ok'")
        assert listed["stdout"].split() == ["app.py", "pkg", "done", "$ok"]
        await call(client, "run_command", command='echo "it\'s fine" > out.txt; cat out.txt >> copy.txt')
        assert (secrets / "copy.txt").read_text() == "it's fine\n"
        globbed = await call(client, "run_command", command="cat src/*.py | wc -l", cwd=".")
        assert int(globbed["stdout"]) == 7
        found = await call(client, "run_command", command="find src/pkg docs -name '*.py' | sort")
        assert found["stdout"].split() == ["src/pkg/util.py"]
        assert "'.env' there is hidden" in await fail(client, "run_command", command="find src -name '*.py'")
        both = await call(client, "run_command", command="cat missing 2>&1 || true")
        assert "missing" in both["stdout"] and both["exit_code"] == 0


async def test_interpreters_are_denied_by_default_even_when_allowed(files_client, tmp_path):
    marker = tmp_path / "MARKER"
    runners = ["echo", "python3", "bash", "sh", "env", "xargs", "perl", "awk", "sed", "make", "npm", "node", "git"]
    async with files_client(categories=EXEC, allowed_commands=runners) as client:
        for command in (
            f'python3 -c \'open("{marker}", "w")\'',
            f"bash -c 'touch {marker}'",
            f"env touch {marker}",
            "echo MARKER | xargs touch",
            f"awk 'BEGIN {{ system(\"touch {marker}\") }}'",
            f"sed -n '1e touch {marker}' README.md",
            "make",
            f"git -c alias.x='!touch {marker}' x",
        ):
            message = await fail(client, "run_command", command=command)
            assert "is in denied_commands" in message, (command, message)
    assert not marker.exists()


async def test_environment_is_an_allowlist(files_client, monkeypatch):
    for name, value in {
        "OPENAI_KEY": "sk-openai",
        "GITHUB_PAT": "ghp-pat",
        "MONGODB_URI": "mongodb://user:pw@db",
        "SOME_RANDOM_VAR": "random-value",
        "LD_PRELOAD": "/tmp/evil.so",
        "BASH_ENV": "/tmp/evil.sh",
        "LC_TIME": "C",
        "MY_SETTING": "visible",
    }.items():
        monkeypatch.setenv(name, value)
    config = {"allowed_commands": ["printenv"], "pass_env": ["MY_SETTING", "LD_PRELOAD", "BASH_ENV"]}
    async with files_client(categories=[*EXEC, "python"], **config) as client:
        printed = (await call(client, "run_command", command="printenv"))["stdout"]
        python = (await call(client, "run_python", code="import os; print(dict(os.environ))"))["stdout"]
    for out in (printed, python):
        for secret in ("sk-openai", "ghp-pat", "mongodb://", "random-value", "/tmp/evil"):
            assert secret not in out
        assert "visible" in out and "LC_TIME" in out and "PATH" in out


async def test_background_jobs_are_refused(files_client, tmp_path):
    marker = tmp_path / "MARKER"
    async with files_client(categories=EXEC, allowed_commands=["echo", "sleep", "touch"], command_timeout=20) as client:
        message = await fail(client, "run_command", command=f"echo started; sleep 1 && touch {marker} &")
    assert "background jobs ('&') are not allowed" in message
    assert not marker.exists()
