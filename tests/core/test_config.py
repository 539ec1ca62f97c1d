"""Finding and validating nexus.toml: every error names the file, the key and the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexus_core.config.model import find_config, load_config, trust
from nexus_core.errors import ConfigError


def test_defaults_without_any_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NEXUS_CONFIG", raising=False)
    config = load_config()
    assert config.source == "defaults"
    assert config.server.http.host == "127.0.0.1" and config.server.http.port == 8766
    assert config.roots_for("files") is None  # each session's roots


def test_search_order_explicit_then_env_then_trusted_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nexus.toml").write_text('[server]\nname = "cwd"\n')
    (tmp_path / "env.toml").write_text('[server]\nname = "env"\n')
    (tmp_path / "explicit.toml").write_text('[server]\nname = "explicit"\n')
    monkeypatch.delenv("NEXUS_CONFIG", raising=False)
    assert load_config().server.name == "nexus"  # an untrusted folder's file only narrows
    assert find_config().narrowing == tmp_path / "nexus.toml"
    trust(tmp_path)
    assert load_config().server.name == "cwd"
    monkeypatch.setenv("NEXUS_CONFIG", str(tmp_path / "env.toml"))
    assert load_config().server.name == "env"
    assert load_config(tmp_path / "explicit.toml").server.name == "explicit"


def test_a_named_file_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.toml: config file not found"):
        load_config(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    ("toml", "key", "reason"),
    [
        ("[server]\nport = 1\n", "server.port", "unknown key"),
        ("[server.http]\nport = 99999\n", "server.http.port", "less than or equal to 65535"),
        ('[server.http]\ntoken = "inline-secret"\n', "server.http.token", "valid dictionary"),
        ("[server]\nlog_level = 'LOUD'\n", "server.log_level", "'DEBUG', 'INFO', 'WARNING' or 'ERROR'"),
        ("[plugins]\nfiles = 3\n", "plugins", "must be a table"),
        ("[plugins.files]\ncategories = 'read'\n", "plugins.files.categories", "valid list"),
        ("[plugins.files]\nprefix = '1x'\n", "plugins.files.prefix", "should match pattern"),
        ("[extra]\n", "extra", "unknown key"),
    ],
)
def test_invalid_values_name_file_key_and_reason(tmp_path: Path, toml: str, key: str, reason: str) -> None:
    path = tmp_path / "nexus.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.source == str(path.resolve())
    assert err.value.key == key
    assert reason in err.value.reason


def test_toml_syntax_errors_are_config_errors(tmp_path: Path) -> None:
    path = tmp_path / "nexus.toml"
    path.write_text("[server\nname = 1\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)


def test_paths_resolve_against_the_config_folder(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "nexus.toml"
    path.parent.mkdir()
    path.write_text(
        '[server]\ndata_dir = "data"\nroots = ["code"]\n'
        '[plugins.files]\nroots = ["~/elsewhere"]\ndeny_paths = ["*.key"]\n'
        '[plugins.notes]\ndata_dir = "/abs/notes"\n'
    )
    config = load_config(path)
    assert config.roots_for("memory") == [tmp_path / "conf" / "code"]
    assert config.roots_for("files") == [Path.home() / "elsewhere"]
    assert config.data_dir_for("memory") == tmp_path / "conf" / "data" / "memory"
    assert config.data_dir_for("notes") == Path("/abs/notes")
    assert config.deny_paths_for("files") == ["*.key"]


def test_token_reads_its_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "nexus.toml"
    path.write_text('[server.http]\ntoken = { env = "MY_TOKEN" }\n')
    monkeypatch.setenv("MY_TOKEN", "s3cret")
    assert load_config(path).server.http.token.resolve() == "s3cret"
    monkeypatch.delenv("MY_TOKEN")
    assert load_config(path).server.http.token.resolve() is None


def test_config_check_lists_every_error_with_its_value_and_a_did_you_mean(tmp_path: Path) -> None:
    import subprocess

    from tests.conftest import nexus_command, server_env

    broken = tmp_path / "broken.toml"
    broken.write_text('[server]\nidle_timout = 60\nlog_level = "LOUD"\n[server.http]\nprot = 1\n')
    out = subprocess.run(
        nexus_command("config", "check", "--config", str(broken)),
        capture_output=True, text=True, timeout=120, env=server_env(), cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 2
    assert "server.idle_timout: unknown key (did you mean 'idle_timeout'?) (got 60)" in out.stderr
    assert "server.http.prot: unknown key (did you mean 'port'?) (got 1)" in out.stderr
    assert "server.log_level: Input should be 'DEBUG', 'INFO', 'WARNING' or 'ERROR' (got 'LOUD')" in out.stderr

    plugin = tmp_path / "plugin.toml"
    plugin.write_text('[plugins.hello]\ncategories = ["greet", "fils", "gret"]\ngreetng = "hi"\n')
    out = subprocess.run(
        nexus_command("config", "check", "--config", str(plugin)),
        capture_output=True, text=True, timeout=120, env=server_env(), cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 1
    assert "[plugins.hello] failed:" in out.stdout
    assert "unknown category 'fils' (did you mean 'files'?" in out.stdout
    assert "unknown category 'gret' (did you mean 'greet'?" in out.stdout

    misspelt = tmp_path / "misspelt.toml"  # a table for no installed plugin configures nothing: said, not just logged
    misspelt.write_text("[plugins.helo]\ngreeting = 'hi'\n")
    out = subprocess.run(
        nexus_command("config", "check", "--config", str(misspelt)),
        capture_output=True, text=True, timeout=120, env=server_env(), cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 1
    assert "[plugins.helo] failed:\n  error: no installed plugin is named 'helo' (did you mean 'hello'?)" in out.stdout


def test_an_unknown_key_is_hinted_at_any_depth(tmp_path: Path) -> None:
    path = tmp_path / "nexus.toml"
    path.write_text("[server.audit]\nenabeld = true\n[profiles.work]\nplugns = []\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert dict(err.value.problems) == {
        "server.audit.enabeld": "unknown key (did you mean 'enabled'?) (got True)",
        "profiles.work.plugns": "unknown key (did you mean 'plugins'?)",
    }


def test_config_check_names_the_untrusted_folders_file_and_its_unknown_categories(tmp_path: Path) -> None:
    """`nexus config init` then `nexus config check` in a folder not trusted: the file only narrows, and a typo in
    it is an error like one in the config."""
    import subprocess

    from tests.conftest import nexus_command, server_env

    (tmp_path / "nexus.toml").write_text('[plugins.hello]\ncategories = ["greet", "fils"]\n')
    out = subprocess.run(
        nexus_command("config", "check"), capture_output=True, text=True, timeout=120, env=server_env(), cwd=tmp_path
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"narrowed by: {tmp_path.resolve() / 'nexus.toml'} (a folder you have not trusted" in out.stdout
    assert "plugins.hello.categories: unknown category 'fils' (did you mean 'files'?)" in out.stdout
