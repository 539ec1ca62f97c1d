"""The keys of ``[plugins.files]`` besides those the host reads itself."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from nexus_core import PluginConfig

MiB = 1024 * 1024

# Deny wins over allow. Besides destructive and network tools, this lists every
# interpreter and command runner: allowing one hands over the machine, since it
# runs whatever its arguments say, beyond the reach of run_command's checks.
DEFAULT_DENIED_COMMANDS = [
    "rm", "rmdir", "shred", "sudo", "su", "doas", "pkexec", "runuser", "chroot", "unshare", "nsenter",
    "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "telnet", "ftp", "socat",
    "dd", "mkfs", "fdisk", "mount", "umount", "shutdown", "reboot", "halt", "poweroff", "systemctl",
    "kill", "killall", "pkill", "chmod", "chown", "chgrp", "crontab", "at", "batch",
    "eval", "exec", "source", ".", "env", "xargs", "command", "builtin", "parallel", "watch", "script",
    "sh", "bash", "zsh", "fish", "dash", "ksh", "csh", "tcsh", "busybox",
    "python", "python2", "python3", "pip", "pip3", "pipx", "uv", "uvx", "poetry", "pdm", "hatch",
    "perl", "ruby", "irb", "node", "nodejs", "deno", "bun", "npm", "npx", "pnpm", "yarn", "php", "lua",
    "tclsh", "Rscript", "julia", "java", "jshell", "osascript",
    "awk", "gawk", "mawk", "nawk", "sed", "ed", "ex", "vi", "vim", "nvim", "emacs", "man",
    "make", "gmake", "cmake", "ninja", "git", "tar", "zip", "docker", "podman", "kubectl",
    "gdb", "strace", "ltrace", "expect", "tmux", "screen", "flock", "systemd-run",
]  # fmt: skip


class FilesConfig(PluginConfig):
    """Limits and command policy of the files plugin."""

    max_file_size: int = Field(50 * MiB, ge=1, description="Files larger than this (bytes) are refused.")
    max_output_bytes: int = Field(100_000, ge=1_000, description="Cap on the text one tool call returns.")
    command_timeout: float = Field(30.0, gt=0, le=3600, description="Longest run_command/run_python/git run (s).")
    search_timeout: float = Field(60.0, gt=0, le=3600, description="Longest ripgrep run for grep/glob (s).")
    allowed_commands: list[str] = Field(
        default_factory=list, description="Command names run_command may run; empty refuses every command."
    )
    trusted_commands: list[str] = Field(
        default_factory=list,
        description="Commands run_command runs although it has no argument spec for them (pytest, ruff, cargo, ...): "
        "their arguments get only the path check, and their options may read, write or run whatever the program can.",
    )
    denied_commands: list[str] = Field(
        default_factory=lambda: list(DEFAULT_DENIED_COMMANDS), description="Never run, even when allowed."
    )
    pass_env: list[str] = Field(
        default_factory=list,
        description="Environment variables passed to run_command/run_python besides PATH, HOME, LANG, LC_* and "
        "the like; every other variable (tokens, keys, URLs with passwords) is left out.",
    )
    shell: str | None = Field(None, description="Shell for run_command; default: the user's shell (shellingham).")
    python_executable: str | None = Field(None, description="Interpreter for run_python; default: the server's.")
    use_ripgrep: Literal["auto", "always", "never"] = Field(
        "auto", description="grep/glob through ripgrep when it is found (auto), always, or never (pure Python)."
    )
    ripgrep_path: str | None = Field(
        None, description="Path of the rg binary; default: found next to Python or on PATH."
    )
