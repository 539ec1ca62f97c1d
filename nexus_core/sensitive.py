"""What no plugin sees or changes by default, whatever the roots: secrets, and files that run code later.

Both lists use gitignore syntax and match at any depth below a root. ``[server]
deny_secrets = false`` removes the secret list (``deny_paths`` still applies);
the code list cannot be switched off, since a write there runs at the next
login, commit or interpreter start.
"""

from __future__ import annotations

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
    # git hooks kept outside .git (core.hooksPath)
    ".husky/", ".githooks/",
    # Nexus's own config: a trusted folder's file loads plugins and grants permissions
    "nexus.toml",
)  # fmt: skip

# Never served, wherever the roots are: the kernel's views of processes (a server's own environment), devices.
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
