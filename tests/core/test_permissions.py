"""The path policy on real files, folders and symlinks."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nexus_core.access.denied import PermissionDenied
from nexus_core.access.grants import Grants
from nexus_core.config.model import load_config, user_config_path
from nexus_core.fs.paths import PathPolicy


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / ".env").write_text("TOKEN=1\n")
    (root / "keys").mkdir()
    (root / "keys" / "server.pem").write_text("KEY\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (tmp_path / "outside.txt").write_text("no\n")
    (root / "escape").symlink_to(tmp_path)
    (root / "inner-link.py").symlink_to(root / "src" / "app.py")
    (root / "env-alias").symlink_to(root / ".env")
    return root


@pytest.fixture
def policy(tree: Path) -> PathPolicy:
    return PathPolicy([tree], ["**/.env", "*.pem"], deny_secrets=False)  # deny_paths alone (the list: below)


def test_relative_paths_resolve_against_the_first_root(policy: PathPolicy, tree: Path) -> None:
    assert policy.resolve("src/app.py") == tree / "src" / "app.py"
    assert policy.resolve(tree / "src") == tree / "src"
    assert policy.resolve(".") == tree


def test_dotdot_and_absolute_paths_outside_are_refused(policy: PathPolicy, tree: Path) -> None:
    for path in ("../outside.txt", "src/../../outside.txt", str(tree.parent / "outside.txt"), "/etc/passwd"):
        with pytest.raises(PermissionDenied, match="outside the allowed roots"):
            policy.resolve(path)


def test_dotdot_that_stays_inside_is_fine(policy: PathPolicy, tree: Path) -> None:
    assert policy.resolve("src/../src/app.py") == tree / "src" / "app.py"


def test_symlinks_are_resolved_before_checking(policy: PathPolicy, tree: Path) -> None:
    with pytest.raises(PermissionDenied, match="symlink"):
        policy.resolve("escape/outside.txt")
    assert policy.resolve("inner-link.py") == tree / "src" / "app.py"


def test_deny_patterns_apply_to_the_path_as_written_and_the_real_path(policy: PathPolicy) -> None:
    with pytest.raises(PermissionDenied, match=r"matches the deny_paths pattern '\*\*/\.env'"):
        policy.resolve(".env")
    with pytest.raises(PermissionDenied, match=r"'\*\.pem'"):
        policy.resolve("keys/server.pem")
    with pytest.raises(PermissionDenied, match="deny_paths"):
        policy.resolve("env-alias")  # a harmless name pointing at a denied file


def test_a_denied_name_is_refused_even_when_it_links_to_an_allowed_file(policy: PathPolicy, tree: Path) -> None:
    (tree / "src" / ".env").symlink_to(tree / "src" / "app.py")
    with pytest.raises(
        PermissionDenied, match=r"^permission denied: 'src/\.env' matches the deny_paths pattern '\*\*/\.env'$"
    ):
        policy.resolve("src/.env")  # the real path (src/app.py) is allowed; the name as written is not
    assert policy.resolve("src/app.py") == tree / "src" / "app.py"


def test_directory_patterns_hide_everything_below(tree: Path) -> None:
    policy = PathPolicy([tree], ["keys/"])
    with pytest.raises(PermissionDenied):
        policy.resolve("keys")
    with pytest.raises(PermissionDenied):
        policy.resolve("keys/server.pem")
    assert policy.allows(tree / "src" / "app.py")
    assert not policy.allows(tree / "keys" / "server.pem")


def test_writes_inside_git_are_refused_reads_are_not(policy: PathPolicy, tree: Path) -> None:
    assert policy.resolve(".git/config") == tree / ".git" / "config"
    with pytest.raises(PermissionDenied, match="git directory"):
        policy.resolve(".git/config", write=True)
    assert policy.resolve("src/new.py", write=True) == tree / "src" / "new.py"


def test_empty_and_nul_paths_are_refused(policy: PathPolicy) -> None:
    for bad in ("", "   ", "a\x00b"):
        with pytest.raises(PermissionDenied):
            policy.resolve(bad)


def test_several_roots(tmp_path: Path, tree: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    policy = PathPolicy([tree, other])
    assert policy.resolve(other / "x") == other / "x"
    assert policy.resolve("x") == tree / "x"  # relative: the first root
    assert policy.display(other / "x") == str(other / "x")


def test_a_root_given_through_a_symlink_still_contains_its_files(tmp_path: Path, tree: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(tree)
    policy = PathPolicy([alias])
    assert policy.resolve("src/app.py") == tree / "src" / "app.py"


def test_grants_say_why() -> None:
    grants = Grants("files", frozenset({"read"}), frozenset(), frozenset({"tail"}))
    assert grants.refusal(["read_file"], "read") is None
    assert "needs the 'write' category" in grants.refusal(["write_file"], "write")
    assert "deny_tools" in grants.refusal(["tail"], "read")
    narrowed = Grants("files", frozenset({"read"}), frozenset({"read_file"}))
    assert "allow_tools" in narrowed.refusal(["tail"], "read")


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_writes_into_any_git_directory_are_refused(tmp_path: Path) -> None:
    """Bare and separate git dirs too: writing there could plant a hook or a filter that runs programs."""
    git("init", "--bare", "-q", "remote.git", cwd=tmp_path)
    (tmp_path / "gitdirs").mkdir()
    git("init", "-q", "--separate-git-dir", str(tmp_path / "gitdirs" / "proj"), "proj", cwd=tmp_path)
    (tmp_path / "upper").mkdir()
    policy = PathPolicy([tmp_path])
    for target in ("remote.git/hooks/post-update", "gitdirs/proj/config", "upper/.GIT/hooks/pre-commit"):
        with pytest.raises(PermissionDenied, match="git directory"):
            policy.resolve(target, write=True)
    assert policy.resolve("remote.git/HEAD") == tmp_path / "remote.git" / "HEAD"  # reading is fine
    assert policy.resolve("proj/main.py", write=True) == tmp_path / "proj" / "main.py"  # the work tree is not


def test_protected_paths_are_readable_but_never_writable(tree: Path) -> None:
    policy = PathPolicy([tree], protected=[tree / "nexus.toml", tree / "plugins"])
    for target in ("nexus.toml", "plugins/evil.py"):
        with pytest.raises(PermissionDenied, match="Nexus's own configuration, data or code"):
            policy.resolve(target, write=True)
    assert policy.resolve("nexus.toml") == tree / "nexus.toml"


def test_the_config_protects_what_nexus_reads_at_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "conf" / "nexus.toml"
    path.parent.mkdir()
    path.write_text('[server]\ndata_dir = "data"\nplugin_dirs = ["skills"]\n')
    protected = load_config(path).protected_paths()
    expected = [path, tmp_path / "conf" / "data", tmp_path / "conf" / "skills"]
    assert all(p in protected for p in expected)
    assert user_config_path().parent in protected
