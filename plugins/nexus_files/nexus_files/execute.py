"""run_command (the execute category: the user's shell, after strict validation) and run_python.

run_python has a category of its own, ``python``, off by default: a script can
do whatever the user can, so granting it is granting full access. Both run their
child under the reaper (nothing outlives the call) with an allowlisted environment.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated

from pydantic import Field

from nexus_core import PathPolicy, PluginContext, ToolError, ToolRegistrar

from .config import FilesConfig
from .process import ProcessOutput, child_env, run_process
from .results import ToolOutput, tool
from .shellcheck import check_command


class CommandResult(ToolOutput):
    command: str
    cwd: str
    exit_code: int
    stdout: str
    stderr: str
    truncated: bool = Field(description="True when stdout or stderr was cut at max_output_bytes.")
    duration_seconds: float
    shell: str | None = Field(None, description="The shell that ran the command.")

    def render(self) -> str:
        parts = [f"$ {self.command}  (exit {self.exit_code}, {self.duration_seconds:.2f} s, in {self.cwd})"]
        if self.stdout:
            parts.append(self.stdout.rstrip("\n"))
        if self.stderr:
            parts.append("[stderr]\n" + self.stderr.rstrip("\n"))
        if self.truncated:
            parts.append("[output cut at max_output_bytes]")
        return "\n".join(parts)


def user_shell(configured: str | None) -> str:
    """The configured shell, else the user's (shellingham), else $SHELL, else /bin/sh."""
    candidates: list[str] = []
    if configured:
        candidates.append(configured)
    else:
        import shellingham  # only needed once a command runs

        try:
            name, path = shellingham.detect_shell()
            candidates += [path, name]
        except (shellingham.ShellDetectionFailure, RuntimeError):
            pass
        candidates += [os.environ.get("SHELL", ""), "/bin/sh"]
    for candidate in candidates:
        found = shutil.which(candidate) if candidate else None
        if found and os.path.basename(found) in ("sh", "bash", "zsh", "dash", "ksh", "fish"):
            return found
    raise ToolError("no POSIX-like shell found for run_command; set shell in [plugins.files]")


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def workdir(policy: PathPolicy, cwd: str) -> Path:
    real = policy.resolve(cwd)
    if not real.is_dir():
        raise ToolError(f"cwd '{cwd}' is not a folder inside the roots")
    return real


def timeout_for(config: FilesConfig, requested: float | None) -> float:
    return min(requested or config.command_timeout, config.command_timeout)


def result(
    policy: PathPolicy, command: str, cwd: Path, out: ProcessOutput, timeout: float, shell: str | None
) -> CommandResult:
    if out.timed_out:
        tail = _text(out.stdout[-2000:] + out.stderr[-2000:]).strip()
        raise ToolError(
            f"timed out after {timeout} s; the process group was killed" + (f". Last output:\n{tail}" if tail else "")
        )
    return CommandResult(
        command=command,
        cwd=policy.display(cwd) or ".",
        exit_code=out.exit_code if out.exit_code is not None else -1,
        stdout=_text(out.stdout),
        stderr=_text(out.stderr),
        truncated=out.stdout_truncated or out.stderr_truncated,
        duration_seconds=round(out.duration, 3),
        shell=shell,
    )


async def run_command(
    ctx: PluginContext,
    command: Annotated[str, Field(min_length=1, description="A shell command line.")],
    cwd: Annotated[str, Field(description="Working folder inside the roots.")] = ".",
    timeout: Annotated[
        float | None, Field(gt=0, description="Seconds before the process group is killed (at most the config's).")
    ] = None,
) -> CommandResult:
    """Run a shell command line (build, test, any program) in a root, with secrets removed from the environment.

    Only commands in allowed_commands run (denied_commands always win); the refusal says why.
    A non-zero exit code is a result, not an error; a timeout is an error.
    """
    config: FilesConfig = ctx.config
    policy = ctx.paths
    folder = workdir(policy, cwd)
    shell = user_shell(config.shell)
    check_command(command, config, policy, folder, fish=os.path.basename(shell) == "fish")
    limit = timeout_for(config, timeout)
    out = await run_process(
        [shell, "-c", command],
        cwd=folder,
        env=child_env(config.pass_env, folder),
        timeout=limit,
        max_output=config.max_output_bytes,
        contain=True,
    )
    return result(policy, command, folder, out, limit, shell)


async def run_python(
    ctx: PluginContext,
    code: Annotated[str, Field(min_length=1, description="A Python script, run as __main__.")],
    cwd: Annotated[str, Field(description="Working folder inside the roots.")] = ".",
    timeout: Annotated[
        float | None, Field(gt=0, description="Seconds before the process is killed (at most the config's).")
    ] = None,
) -> CommandResult:
    """Run a Python script in a separate, isolated interpreter (-I) with a timeout and output cap."""
    config: FilesConfig = ctx.config
    folder = workdir(ctx.paths, cwd)
    python = config.python_executable or sys.executable
    limit = timeout_for(config, timeout)
    out = await run_process(
        [python, "-I", "-"],
        cwd=folder,
        env=child_env(config.pass_env, folder),
        timeout=limit,
        max_output=config.max_output_bytes,
        stdin=code.encode("utf-8"),
        contain=True,
    )
    return result(ctx.paths, f"python ({len(code.splitlines())} lines)", folder, out, limit, None)


def register(register: ToolRegistrar, ctx: PluginContext) -> None:
    hints = {"destructive": True, "open_world": True, "keywords": "shell, terminal, bash, build, test, make, npm"}
    register(tool(run_command, ctx), category="execute", title="Run a shell command", **hints)
    # The NEXUS skills design names this skill bash_safe: the same tool, under the same checks.
    register(
        tool(run_command, ctx), name="bash_safe", category="execute", title="Run a shell command (bash_safe)", **hints
    )
    python = hints | {"keywords": "python code, compute, calculate"}
    register(tool(run_python, ctx), category="python", title="Run a Python script", **python)
