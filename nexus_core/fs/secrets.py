"""What no plugin sees or changes by default, whatever the roots: secrets, and files that run code later.

Both lists use gitignore syntax and match at any depth below a root. ``[server]
deny_secrets = false`` removes the secret list (``deny_paths`` still applies);
the code list cannot be switched off, since a write there runs at the next
login, commit or interpreter start.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from pathlib import Path

SECRETS = (
    # private keys and key stores
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk",
    ".ssh/", ".gnupg/", ".password-store/",
    # cloud and tool credentials
    ".aws/", ".azure/", ".config/gcloud/", ".kube/", ".docker/config.json", ".config/gh/hosts.yml",
    ".terraform.d/credentials.tfrc.json", ".netrc", "_netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc",
    # environment files (the examples are meant to be shared)
    ".env", ".env.*", "!.env.example", "!.env.sample", "!.env.template",
    # keychains and keyrings
    "*.keychain", "*.keychain-db", "Library/Keychains/", ".local/share/keyrings/",
    # shell and REPL histories
    ".bash_history", ".zsh_history", ".sh_history", ".history", ".python_history", ".node_repl_history",
    ".psql_history", ".mysql_history", ".sqlite_history", ".lesshst", ".local/share/fish/fish_history",
    # Nexus's own: the generated HTTP token (config_dir()/http-token, on every platform)
    "nexus/http-token",
)  # fmt: skip

RUNS_CODE = (
    # shell start files and session scripts
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile", ".zshenv",
    ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login", ".logout", ".kshrc", ".xprofile", ".xinitrc",
    ".xsession", ".xsessionrc", ".pam_environment", ".envrc", ".config/fish/",
    # ssh: keys allowed to log in, per-login commands
    ".ssh/", "authorized_keys", "authorized_keys2",
    # autostart and launch agents
    ".config/autostart/", ".config/systemd/", ".config/environment.d/",
    "Library/LaunchAgents/", "Library/LaunchDaemons/", "Library/StartupItems/",
    # interpreter start-up hooks and installed packages
    "*.pth", "sitecustomize.py", "usercustomize.py", "site-packages/", "dist-packages/", "node_modules/",
    # git hooks kept outside .git (core.hooksPath), hook managers, and git's own config (core.fsmonitor, aliases)
    ".husky/", ".githooks/", ".pre-commit-config.yaml", "lefthook.yml", ".lefthook.yml", ".gitconfig",
    ".config/git/",
    # editors and IDEs: tasks, launch and run configurations, start-up files read from the folder opened
    ".vscode/tasks.json", ".vscode/launch.json", ".idea/runConfigurations/", ".idea/workspace.xml", ".run/",
    ".devcontainer/", ".exrc", ".nvimrc", ".nvim.lua", ".vimrc",
    # direnv's state (.envrc itself is above)
    ".direnv/",
    # Nexus's own config: a trusted folder's file loads plugins and grants permissions
    "nexus.toml",
)  # fmt: skip

# Never served, wherever the roots are: the kernel's views of processes (a server's own environment), devices.
GIT_HEAD = "HEAD"
GIT_BESIDE_HEAD = ("objects", "refs", "commondir")
"""Git takes a folder for a git directory when it holds a valid ``HEAD`` file next to ``objects/`` and
``refs/`` (or a ``commondir`` file naming where those are). Every git directory needs its own ``HEAD``, so no
write may create an entry named ``HEAD``, nor one of ``GIT_BESIDE_HEAD`` in a folder that holds a ``HEAD``:
then no folder can be made a git directory step by step, whatever the order of the writes."""

SYSTEM = (Path("/proc"), Path("/sys"), Path("/dev"))


def anywhere(patterns: tuple[str, ...]) -> list[str]:
    """Patterns with a slash inside are anchored by gitignore; ``**/`` makes them match at any depth too."""
    out = []
    for pattern in patterns:
        negated, body = pattern.startswith("!"), pattern.lstrip("!")
        if "/" in body.rstrip("/") and not body.startswith("**/"):
            body = "**/" + body
        out.append(("!" if negated else "") + body)
    return out


class SecretMatcher:
    """``SECRETS`` as one regex per path component: a walk checks thousands of paths, gitignore-style
    matching of ~50 patterns each would cost more than the walk itself.

    Single-name patterns (``*.pem``, ``.ssh/``) are tried against every component of the relative path;
    multi-name ones (``.config/gcloud/``) against the path's component sequence. A trailing ``/`` means
    a folder: it matches a component that has children, or a last component that is a folder. A negated
    name (``!.env.example``) re-includes the last component only, as in gitignore.
    """

    def __init__(self, patterns: tuple[str, ...], fold: Callable[[str], str]) -> None:
        names = [p for p in patterns if not p.startswith("!") and "/" not in p.rstrip("/")]
        self._files = _one_regex([p for p in names if not p.endswith("/")], fold)
        self._folders = _one_regex([p.rstrip("/") for p in names if p.endswith("/")], fold)
        self._kept = {fold(p[1:]) for p in patterns if p.startswith("!")}
        self._paths = [fold(p.rstrip("/")) for p in patterns if "/" in p.rstrip("/")]
        self._by_regex = {p: re.compile(fnmatch.translate(fold(p.rstrip("/")))) for p in patterns if "!" not in p}

    def match(self, rel: str, is_dir: Callable[[], bool]) -> str | None:
        """The pattern that hides ``rel`` (relative, already folded), or None."""
        parts = rel.split("/")
        last = len(parts) - 1
        for i, part in enumerate(parts):
            if self._files is not None and self._files.match(part) and not (i == last and part in self._kept):
                return self._which(part)
            if self._folders is not None and self._folders.match(part) and (i < last or is_dir()):
                return self._which(part) + "/"
        joined = f"/{rel}/"
        return next((p for p in self._paths if f"/{p}/" in joined), None)

    def _which(self, part: str) -> str:
        return next((p.rstrip("/") for p, rx in self._by_regex.items() if rx.match(part)), part)


def _one_regex(globs: list[str], fold: Callable[[str], str]) -> re.Pattern[str] | None:
    return re.compile("|".join(fnmatch.translate(fold(g)) for g in globs)) if globs else None
