"""Issue 37: a root of / or of the home folder hands over every file the user has; it must be asked for."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nexus_core.config.model import parse_config
from nexus_core.errors import ConfigError
from nexus_core.serve.options import ServeOptions
from tests.conftest import nexus_command, run_dir, server_env, write_config


def serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        nexus_command("serve", *args), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        env=server_env(), cwd=cwd, timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("root", ["/", "~", "HOME/..", "/.."])
@pytest.mark.parametrize("how", [(), ("--standalone",)], ids=["relay", "standalone"])
def test_a_broad_root_is_refused_with_one_line_naming_the_flag(root: str, how: tuple[str, ...], tmp_path: Path):
    home = Path.home()
    given = root.replace("HOME", str(home))
    proc = serve(*how, "--root", given, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--allow-broad-root" in lines[0], proc.stderr
    assert "whole file system" in lines[0] or "whole home folder" in lines[0]
    assert not any(run_dir(home).glob("*.sock")) if run_dir(home).exists() else True  # no server was started


def test_the_flag_and_a_plain_folder_are_accepted(tmp_path: Path):
    ServeOptions.parse(["--root", "/", "--allow-broad-root"]).check_roots()
    ServeOptions.parse(["--root", str(Path.home() / "code"), "--root", str(tmp_path)]).check_roots()
    with pytest.raises(ValueError, match="pass --allow-broad-root"):
        ServeOptions.parse(["--root", str(tmp_path), "--root", "~"]).check_roots()


@pytest.mark.parametrize("table", ["[server]\nroots = ['{root}']\n", "[plugins.files]\nroots = ['{root}']\n"])
@pytest.mark.parametrize("root", ["/", "~"])
def test_a_broad_root_in_the_config_is_refused_unless_allowed(table: str, root: str, tmp_path: Path):
    config = write_config(tmp_path / "nexus.toml", table.format(root=root))
    proc = serve("--standalone", "--config", str(config), cwd=tmp_path)
    assert proc.returncode == 2 and "allow_broad_root = true" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    data = {"server": {"allow_broad_root": True, "roots": [root]}}
    assert parse_config(data).roots_for("files") is not None
    with pytest.raises(ConfigError, match="roots"):
        parse_config({"server": {"roots": [root]}})
