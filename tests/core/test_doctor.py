"""`nexus doctor`: every installed client's entry checked as the client would run it, each problem with its fix."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import nexus_command, server_env


def run(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        nexus_command(*args), capture_output=True, text=True, timeout=300, env=server_env(HOME=str(home)), cwd=cwd
    )


def test_doctor_names_each_problem_with_its_fix_and_passes_once_fixed(tmp_path: Path, isolated_user_dirs: Path) -> None:
    home, project = isolated_user_dirs, tmp_path / "project"  # the fixture's home: its shared servers are stopped
    project.mkdir(parents=True)
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text(json.dumps({"mcpServers": {"nexus": {"command": "/nowhere/nexus", "args": ["serve"]}}}))
    claude_code = home / ".claude.json"
    claude_code.write_text("{ not json")
    workspace = tmp_path / ".vscode" / "mcp.json"  # `nexus install vscode --workspace` in the folder doctor runs in
    workspace.parent.mkdir()
    workspace.write_text(json.dumps({"servers": {"nexus": {"type": "stdio", "command": "/gone/nexus", "args": []}}}))

    broken = run("doctor", home=home, cwd=tmp_path)
    assert broken.returncode == 1
    assert "[FAIL] cursor" in broken.stdout and "its command '/nowhere/nexus' does not exist" in broken.stdout
    assert "fix: run `nexus install cursor`" in broken.stdout
    assert "[FAIL] claude-code" in broken.stdout and "does not parse" in broken.stdout
    assert "[SKIP] codex: not installed" in broken.stdout
    assert f"[FAIL] vscode ({workspace})" in broken.stdout and "its command '/gone/nexus'" in broken.stdout
    assert "fix: run `nexus install vscode --workspace`" in broken.stdout

    workspace.unlink()
    claude_code.write_text("{}\n")
    installed = run("install", "cursor", "--root", str(project), home=home, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr
    fixed = run("doctor", home=home, cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout
    assert "[  ok] cursor" in fixed.stdout and "the server started and listed" in fixed.stdout
    assert "no problems found" in fixed.stdout

    project.rmdir()
    gone = run("doctor", home=home, cwd=tmp_path)
    assert gone.returncode == 1 and f"root {project} does not exist" in gone.stdout


def test_doctor_names_a_plugin_that_does_not_load_and_gemini_folder_trust(
    tmp_path: Path, isolated_user_dirs: Path
) -> None:
    home, project = isolated_user_dirs, tmp_path / "project"  # the fixture's home: its shared servers are stopped
    project.mkdir(parents=True)
    config = tmp_path / "nexus.toml"
    # doctor starts the server: the plugins this test is not about stay out
    lean = "[plugins.memory]\nenabled = false\n[plugins.bridge]\nenabled = false\n"
    config.write_text('[plugins.hello]\ncategories = ["greet", "gret"]\n' + lean)
    for client in ("cursor", "gemini"):
        done = run("install", client, "--config", str(config), home=home, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    gemini = home / ".gemini"
    settings = json.loads((gemini / "settings.json").read_text())
    (gemini / "settings.json").write_text(json.dumps(settings | {"security": {"folderTrust": {"enabled": True}}}))

    broken = run("doctor", home=home, cwd=project)
    assert broken.returncode == 1, broken.stdout
    assert "[FAIL] cursor" in broken.stdout
    assert "problem: plugin hello does not load, so its tools are missing:" in broken.stdout
    assert "unknown category 'gret' (did you mean 'greet'?" in broken.stdout
    assert f"fix: fix [plugins.hello] in {config}" in broken.stdout
    assert f"config {config} is valid" not in broken.stdout  # its [plugins.hello] is not
    assert f"Gemini CLI shows Nexus as Disabled in {project}" in broken.stdout
    assert "every client starts" in broken.stdout  # one install: no second set of servers on the same stores

    config.write_text('[plugins.hello]\ncategories = ["greet"]\n' + lean)
    (gemini / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    fixed = run("doctor", home=home, cwd=project)
    assert fixed.returncode == 0, fixed.stdout
    assert f"Gemini CLI trusts {project}" in fixed.stdout and "no problems found" in fixed.stdout
    assert f"config {config} is valid" in fixed.stdout


def test_two_installs_started_by_clients_are_named_as_one_set_of_stores_shared() -> None:
    from nexus_core.cli.doctor import Check, check_installs

    one = check_installs([Check("cursor", commands={"/a/bin/nexus"}), Check("zed", commands={"/a/bin/nexus"})])
    assert not one.problems and one.ok == ["every client starts /a/bin/nexus"]
    two = check_installs([Check("cursor", commands={"/a/bin/nexus"}), Check("zed", commands={"/b/bin/nexus"})])
    (problem, fix), *_ = two.problems
    assert "2 different Nexus installs (/a/bin/nexus, /b/bin/nexus)" in problem and "same stores" in problem
    assert "nexus install CLIENT" in fix


def test_doctor_lists_every_config_error_of_an_entry_with_a_did_you_mean(
    tmp_path: Path, isolated_user_dirs: Path
) -> None:
    config = tmp_path / "nexus.toml"
    config.write_text('[server]\nidle_timout = 60\nlog_level = "LOUD"\n')
    done = run("install", "cursor", "--config", str(config), home=isolated_user_dirs, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    broken = run("doctor", home=isolated_user_dirs, cwd=tmp_path)
    assert broken.returncode == 1, broken.stdout
    assert f"problem: config {config}: server.idle_timout: unknown key (did you mean 'idle_timeout'?)" in broken.stdout
    assert f"problem: config {config}: server.log_level: Input should be" in broken.stdout
    assert "fix: fix `server.idle_timout`" in broken.stdout and "fix: fix `server.log_level`" in broken.stdout


def test_doctor_names_the_running_servers_their_failed_plugins_and_two_on_one_config(
    tmp_path: Path, isolated_user_dirs: Path
) -> None:
    config = tmp_path / "nexus.toml"
    off = "".join(f"[plugins.{p}]\nenabled = false\n" for p in ("files", "memory", "graph", "manual", "bridge"))
    config.write_text(f'[server]\ndata_dir = "data"\n[plugins.hello]\ncategories = ["greet", "gret"]\n{off}')
    for extra in ((), ("--set", 'plugins.hello.greeting="Hi"')):  # two servers, one config: one set of stores
        started = run("server", "start", "--config", str(config), *extra, home=isolated_user_dirs, cwd=tmp_path)
        assert started.returncode == 0, started.stderr
    out = run("doctor", home=isolated_user_dirs, cwd=tmp_path)
    assert out.returncode == 1, out.stdout
    assert out.stdout.count(f" serves {config}: up ") == 2
    assert "problem: plugin hello: failed:" in out.stdout and "unknown category 'gret'" in out.stdout
    assert "last error in its log:" in out.stdout and " ERROR nexus: plugin 'hello' not loaded" in out.stdout
    assert "problem: 2 shared servers (pids " in out.stdout and f") serve {config}: their plugins share" in out.stdout
