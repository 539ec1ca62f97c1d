"""The execute category: run_command (the user's shell, allowlisted) and run_python."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Annotated

from pydantic import Field

from nexus_core import PathPolicy, PluginContext, ToolError

from .config import FilesConfig
from .process import ProcessOutput, run_process, scrubbed_env
from .results import ToolOutput, tool

SEPARATORS = {";", "&", "&&", "|", "||", "|&", "(", ")", "\n", ";;"}
REDIRECTS = {">", ">>", "<", ">|", "&>", "&>>", "<>"}
# Shell words that precede a command rather than being one.
KEYWORDS = {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time", "coproc"}
# Commands that run the command named by their arguments; that command is checked too.
WRAPPERS = {"nice", "nohup", "timeout", "stdbuf", "ionice", "time", "chrt", "setsid"}
FORBIDDEN_SYNTAX = {"$(": "command substitution", "`": "command substitution", "<(": "process substitution",
                    ">(": "process substitution"}  # fmt: skip


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


def command_names(command: str) -> tuple[list[str], list[str]]:
    """The command names a shell line would run, and the files it redirects to or from.

    Refuses what would hide a command from this check: substitutions and
    non-literal command names. Words are split with POSIX shell quoting.
    """
    for token, what in FORBIDDEN_SYNTAX.items():
        if token in command:
            raise ToolError(f"refused: {what} ('{token}') is not allowed in run_command; run the parts separately")
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise ToolError(f"refused: cannot parse the command ({exc})") from None
    names: list[str] = []
    redirects: list[str] = []
    expect_command, expect_target, wrapped = True, False, False
    for tok in tokens:
        if expect_target:
            expect_target = False
            if not tok.isdigit() and tok != "-":
                redirects.append(tok)
            continue
        if tok in SEPARATORS:
            expect_command, wrapped = True, False
            continue
        if tok in REDIRECTS or tok in (">&", "<&"):
            expect_target = True
            continue
        if tok in ("<<", "<<<", "<<-"):
            expect_target = False
            continue
        if not expect_command:
            continue
        if tok in KEYWORDS or ("=" in tok and not tok.startswith("=") and tok.split("=", 1)[0].isidentifier()):
            continue  # a keyword or a VAR=value prefix: the command is still to come
        if wrapped and (tok.startswith("-") or tok.replace(".", "").isdigit()):
            continue  # a wrapper's option or duration
        if "$" in tok or "*" in tok or "?" in tok or "[" in tok:
            raise ToolError(f"refused: the command name {tok!r} is not literal; name the program directly")
        name = os.path.basename(tok)
        names.append(name)
        wrapped = name in WRAPPERS
        expect_command = wrapped
    if not names:
        raise ToolError("refused: no command found")
    return names, redirects


def check_command(command: str, config: FilesConfig, policy: PathPolicy, cwd: Path) -> list[str]:
    names, redirects = command_names(command)
    denied = set(config.denied_commands)
    for name in names:
        if name in denied:
            raise ToolError(f"refused: '{name}' is in denied_commands of [plugins.files]")
    if not config.allowed_commands:
        raise ToolError(
            "refused: run_command runs only commands listed in allowed_commands of [plugins.files], which is empty; "
            f"add {names[0]!r} there to allow it"
        )
    allowed = set(config.allowed_commands)
    for name in names:
        if name not in allowed:
            raise ToolError(
                f"refused: '{name}' is not in allowed_commands of [plugins.files] "
                f"(allowed: {', '.join(sorted(allowed))})"
            )
    for target in redirects:
        if target != "/dev/null":
            policy.resolve(target if os.path.isabs(target) else cwd / target, write=True)
    return names


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


def register(register, ctx: PluginContext) -> None:
    config: FilesConfig = ctx.config
    policy = ctx.paths

    def workdir(cwd: str) -> Path:
        real = policy.resolve(cwd)
        if not real.is_dir():
            raise ToolError(f"cwd '{cwd}' is not a folder inside the roots")
        return real

    def timeout_for(requested: float | None) -> float:
        return min(requested or config.command_timeout, config.command_timeout)

    def result(command: str, cwd: Path, out: ProcessOutput, timeout: float, shell: str | None) -> CommandResult:
        if out.timed_out:
            tail = _text(out.stdout[-2000:] + out.stderr[-2000:]).strip()
            raise ToolError(
                f"timed out after {timeout} s; the process group was killed"
                + (f". Last output:\n{tail}" if tail else "")
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
        command: Annotated[str, Field(min_length=1, description="A shell command line.")],
        cwd: Annotated[str, Field(description="Working folder inside the roots.")] = ".",
        timeout: Annotated[
            float | None, Field(gt=0, description="Seconds before the process group is killed (at most the config's).")
        ] = None,
    ) -> CommandResult:
        """Run a command line in the user's shell, inside a root, with secrets removed from the environment.

        Only commands in allowed_commands run (denied_commands always win); the refusal says why.
        A non-zero exit code is a result, not an error; a timeout is an error.
        """
        folder = workdir(cwd)
        check_command(command, config, policy, folder)
        shell = user_shell(config.shell)
        limit = timeout_for(timeout)
        out = await run_process(
            [shell, "-c", command],
            cwd=folder,
            env=scrubbed_env(),
            timeout=limit,
            max_output=config.max_output_bytes,
        )
        return result(command, folder, out, limit, shell)

    async def run_python(
        code: Annotated[str, Field(min_length=1, description="A Python script, run as __main__.")],
        cwd: Annotated[str, Field(description="Working folder inside the roots.")] = ".",
        timeout: Annotated[
            float | None, Field(gt=0, description="Seconds before the process is killed (at most the config's).")
        ] = None,
    ) -> CommandResult:
        """Run a Python script in a separate, isolated interpreter (-I) with a timeout and output cap."""
        folder = workdir(cwd)
        python = config.python_executable or sys.executable
        limit = timeout_for(timeout)
        out = await run_process(
            [python, "-I", "-"],
            cwd=folder,
            env=scrubbed_env(),
            timeout=limit,
            max_output=config.max_output_bytes,
            stdin=code.encode("utf-8"),
        )
        return result(f"python ({len(code.splitlines())} lines)", folder, out, limit, None)

    register(tool(run_command), category="execute", title="Run a shell command", destructive=True, open_world=True)
    register(tool(run_python), category="execute", title="Run a Python script", destructive=True, open_world=True)
