"""The `nexus` command line, run in-process with click's runner and, where it matters, as a process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexus_core.cli.main import cli
from nexus_core.config.effective import with_libraries
from nexus_core.config.model import load_config
from tests.conftest import nexus_command, server_env, write_config


def run(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    return write_config(
        tmp_path / "nexus.toml",
        f'[server]\ndata_dir = "{tmp_path / "data"}"\nroots = ["{tmp_path}"]\n'
        '[plugins.modplug]\nmodule = "tests.core.module_plugin"\n',
    )


def test_plugins_lists_entry_points_and_modules(config: Path) -> None:
    code, out, _ = run("plugins", "--config", str(config))
    assert code == 0
    hello = next(line for line in out.splitlines() if line.startswith("hello "))
    assert "0.1.0" in hello and " ok " in hello and "greet,files" in hello and "entry point nexus_hello" in hello
    assert any(line.startswith("modplug ") and "module tests.core.module_plugin" in line for line in out.splitlines())


def test_tools_shows_plugin_category_and_grant(config: Path) -> None:
    code, out, _ = run("tools", "--config", str(config))
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "greet" in rows["hello"] and "granted" in rows["hello"]
    assert "refused" in rows["count_lines"] and "'files' category" in rows["count_lines"]
    assert "modplug" in rows["reverse"]


def test_call_with_key_values_json_and_overrides(config: Path) -> None:
    code, out, _ = run("call", "--config", str(config), "hello", "name=123")  # stays a string: the schema says so
    assert code == 0 and json.loads(out) == {"text": "Hello, 123!", "count": 1}
    code, out, _ = run("call", "--config", str(config), "reverse", "--json", '{"text": "abc"}')
    assert code == 0 and json.loads(out) == {"result": "cba"}
    grant = 'plugins.hello.categories=["greet", "files"]'
    code, out, _ = run("call", "--config", str(config), "--set", grant, "count_lines", "path=notes.txt")
    assert code == 0 and json.loads(out) == {"path": "notes.txt", "lines": 3}


def test_call_reports_refusals_and_errors_with_exit_1(config: Path) -> None:
    code, _, err = run("call", "--config", str(config), "count_lines", "path=notes.txt")
    assert code == 1 and "'files' category" in err
    code, _, err = run("call", "--config", str(config), "hello", "name=")
    assert code == 1 and "at least 1 character" in err
    code, _, err = run("call", "--config", str(config), "no_such_tool")
    assert code == 1 and "Unknown tool: no_such_tool" in err
    code, _, err = run("call", "--config", str(config), "hello", "--json", "[1]")
    assert code == 2 and "--json must be a JSON object" in err


def test_config_init_writes_a_valid_commented_example(tmp_path: Path) -> None:
    target = tmp_path / "nexus.toml"
    code, out, _ = run("config", "init", "--path", str(target))
    assert code == 0 and f"wrote {target}" in out
    text = target.read_text()
    assert "[plugins.hello]" in text and "#   files: Count the lines" in text and "(off by default)" in text
    code, out, _ = run("config", "check", "--config", str(target))
    assert code == 0 and "[plugins.hello] ok" in out
    code, _, err = run("config", "init", "--path", str(target))
    assert code == 2 and "--force" in err


def test_config_check_prints_effective_permissions_and_fails_on_errors(config: Path, tmp_path: Path) -> None:
    code, out, _ = run("config", "check", "--config", str(config), "--set", 'plugins.hello.deny_tools=["hello"]')
    assert code == 0
    assert "category greet      granted" in out and "category files      not granted" in out
    assert "tools: 0 of 2 callable" in out and f"roots: {tmp_path}" in out
    bad = write_config(tmp_path / "bad.toml", "[plugins.hello]\ncategories = ['greet', 'shout']\n")
    code, out, _ = run("config", "check", "--config", str(bad))
    assert code == 1 and "unknown category 'shout'" in out


def test_a_missing_required_plugin_is_an_error(tmp_path: Path) -> None:
    bad = write_config(tmp_path / "nexus.toml", "[plugins.ghost]\nrequired = true\n")
    code, _, err = run("tools", "--config", str(bad))
    assert code == 2 and "plugins.ghost: no installed plugin is named 'ghost'" in err


def test_completion_for_a_named_and_a_detected_shell() -> None:
    code, out, _ = run("completion", "bash")
    assert code == 0 and "_NEXUS_COMPLETE=bash_complete" in out
    proc = subprocess.run(
        ["bash", "-c", f"{' '.join(nexus_command('completion'))}"], capture_output=True, text=True, env=server_env()
    )
    assert proc.returncode == 0 and "_NEXUS_COMPLETE" in proc.stdout  # shellingham found bash as the parent


def test_a_disabled_plugin_is_never_imported(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", "[plugins.hello]\nenabled = false\n")
    script = (
        "import sys; from nexus_core.config.model import load_config; from nexus_core.assembly import build_host; "
        f"host = build_host(load_config({str(config)!r})); "
        "print(host.plugins['hello'].status, 'nexus_hello' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "disabled False"


def test_plugins_add_cli_commands_through_entry_points() -> None:
    code, out, _ = run("--help")
    assert code == 0 and "hello" in out
    code, out, _ = run("hello", "Ada")
    assert code == 0 and out == "Hello, Ada!\n"


def test_set_and_libraries_are_toml_lines(tmp_path: Path) -> None:
    config = write_config(tmp_path / "nexus.toml", f'[server]\ndata_dir = "{tmp_path}"\n')
    code, out, _ = run("call", "--config", str(config), "--set", "plugins.hello.greeting=Hi there", "hello", "name=Ada")
    assert code == 0 and json.loads(out)["text"] == "Hi there, Ada!"

    libraried = with_libraries(load_config(config), "work:notes/work, 笔记:/tmp/n")
    manual = libraried.table("manual")
    work = str(Path.cwd() / "notes/work")
    assert manual.plugin_keys == {"libraries": {"work": work, "笔记": "/tmp/n"}}
    assert libraried.roots_for("manual") is None  # each library folder is the plugin's own root
    code, _, err = run("serve", "--libraries", "work")
    assert code == 2 and "NAME:PATH" in err


@pytest.mark.parametrize("args", [["--help"], ["server", "status"], ["config", "--help"], ["install", "--help"]])
def test_commands_that_serve_nothing_import_no_sdk(args: list[str], tmp_path: Path) -> None:
    """What makes them answer in a tenth of a second: the SDK (~1 s to import) loads only where a host is built."""
    code = (
        "import sys\nfrom nexus_core.cli.main import cli\n"
        f"try:\n    cli({args!r})\nexcept SystemExit:\n    pass\n"
        "print('SDK imported' if 'mcp' in sys.modules else 'no SDK', file=sys.stderr)"
    )
    env = server_env(HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.stderr.strip().splitlines()[-1] == "no SDK", out.stderr


def test_the_relay_imports_little(tmp_path: Path) -> None:
    """`nexus serve` runs at every client launch and, on a cold start, before the shared server can start: with no
    config file and no trusted folders it imports neither the SDK, nor what only some launches need (TOML, a
    subprocess, a temporary file, logging, platformdirs on Linux, dataclasses and inspect)."""
    heavy = ["mcp", "pydantic", "tomllib", "subprocess", "tempfile", "logging", "dataclasses", "inspect"]
    heavy += ["platformdirs"] if sys.platform == "linux" else []
    code = (
        "import sys\nfrom nexus_core.serve import relay\n"
        "options = relay.ServeOptions.parse([])\n"
        "choice = relay.lookup.find_config(options.config)\n"
        "relay.greeting.server_name(choice.path, options.overrides, options.name)\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    env = server_env(HOME=str(tmp_path))
    argv = [sys.executable, "-c", code]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
