"""Every shell command in README.md and docs/*.md is run as written (issue 33), from where the pages put the reader:
in a folder of their own with the checkout's ``.venv`` in it and ``nexus`` on the PATH, with a fresh home folder.

A page's ``bash`` blocks run in order, one command at a time (a block may rely on the one before: ``config init``,
then ``config check``); the pages run side by side, each with its own home and folder. Each command must end with
status 0. Commands that cannot run here are left out by the rules of ``NOT_RUN``, each with its reason; servers
(``SERVED``) are started, asked for their tools, and stopped. A command a page adds is picked up as it is: it runs,
or a rule names why not.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client

from nexus_core.config.model import NexusConfig
from tests.conftest import config_dir, home_env, http_client, run_dir, stop_shared_servers

REPO = Path(__file__).parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELLS = {"bash", "sh", "shell", "console", "zsh"}
TIMEOUT = 120  # seconds a command may take on a loaded machine; one that keeps running belongs in SERVED

# What cannot run here, by rule: a command (or a part of one joined by &&) that matches is not run.
NOT_RUN: list[tuple[str, str]] = [
    (r"^scripts/setup\b", "makes the .venv every other command runs from: CI's first step (.ci/run)"),
    (r"^scripts/test\b", "the test suite this test is part of: CI's second step"),
    (
        r"^(scripts/wheels|pip3? install|pipx|uv tool|uvx)\b",
        "installs Nexus into an environment of its own: scripts/wheelhouse-test (CI's third step) runs "
        "docs/install.md's first pip and first `uv tool install` lines as written; the others install the same "
        "distributions with another installer, or by PyPI names not published yet",
    ),
    (r"^(npm|npx|brew|apt(-get)?|winget|snap)\b", "installs a client app"),
    (r"^(claude|gemini|codex|code|cursor|zed|windsurf|cline)\b", "a client app's own command: none is installed here"),
    (r"^(git clone|curl|wget)\b", "fetches from the internet, which the tests may not reach"),
]
READERS_OWN = ["code/shop"]  # folders in the home folder that the pages use as the reader's own projects


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: `{self.text}`"


# -- the commands, as the pages show them ----------------------------------------------------------------------


def shell_blocks(page: Path) -> list[list[Command]]:
    """The commands of each fenced block tagged as a shell, in order."""
    blocks, fence = [], None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        opening = re.match(r"^\s*```(\w*)", line)
        if fence is None and opening:
            fence = (opening.group(1), [])
        elif fence is not None and line.strip().startswith("```"):
            if fence[0] in SHELLS:
                blocks.append(_commands(page, fence[1]))
            fence = None
        elif fence is not None:
            fence[1].append((number, line))
    return blocks


def _commands(page: Path, lines: list[tuple[int, str]]) -> list[Command]:
    out: list[Command] = []
    pending, first = "", 0
    for number, line in lines:
        text = _without_comment(line).strip().removeprefix("$ ")
        if pending:
            text, number = pending + " " + text, first
        if text.endswith("\\"):
            pending, first = text[:-1].strip(), number
            continue
        pending = ""
        if text:
            out.append(Command(str(page.relative_to(REPO)), number, text))
    return out


def _without_comment(line: str) -> str:
    """The line up to a ``#`` that starts a shell comment (after a space or at the start, outside quotes)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _not_run(part: str) -> str | None:
    return next((reason for pattern, reason in NOT_RUN if re.match(pattern, part)), None)


# -- running them ----------------------------------------------------------------------------------------------

PORT = threading.Lock()  # the pages' HTTP commands use the documented port, 8766: one page at a time


@dataclass
class Reader:
    """One page's reader: a home folder, a folder to work in, and what went wrong."""

    home: Path
    work: Path
    env: dict[str, str]
    failures: list[str]
    holds_port: bool = False

    def run(self, command: Command) -> int:
        """Every part of ``command`` that may run here, in order; how many ran."""
        ran = 0
        for part in (p.strip() for p in command.text.split(" && ")):
            if _not_run(part):
                continue
            if re.search(r"\bnexus (console|serve\b.*--transport (http|sse))", part) and not self.holds_port:
                PORT.acquire()
                self.holds_port = True
            served = next((check for pattern, check in SERVED if re.search(pattern, part)), None)
            error = served(self, part) if served else self._run(part)
            if error:
                self.failures.append(f"{command}: {error}")
                break
            ran += 1
        return ran

    def _run(self, part: str) -> str | None:
        try:
            done = subprocess.run(
                ["bash", "-c", part], cwd=self.work, env=self.env, stdin=subprocess.DEVNULL, capture_output=True,
                text=True, timeout=TIMEOUT,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return f"still running after {TIMEOUT} s (a server? add a rule to SERVED)"
        if done.returncode != 0:
            return f"exit status {done.returncode}\n{(done.stdout + done.stderr)[-2000:]}"
        after = next((check for pattern, check in AFTER if re.search(pattern, part)), None)
        return after(self, done.stdout) if after else None

    def close(self) -> None:
        stop_shared_servers(run_dir(self.home))
        if self.holds_port:
            PORT.release()


def _serve_stdio(reader: Reader, part: str) -> str | None:
    """A stdio server, as a client launches it: it must list its tools over MCP."""

    async def tools() -> int:
        params = StdioServerParameters(command="bash", args=["-c", f"exec {part}"], env=reader.env, cwd=reader.work)
        with anyio.fail_after(TIMEOUT):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return len((await session.list_tools()).tools)

    return None if anyio.run(tools) else "listed no tools over stdio"


def _serve_http(reader: Reader, part: str) -> str | None:
    """Streamable HTTP on the documented address while the command runs: it must list its tools to a client that
    sends the generated token, then stop on SIGINT (Ctrl-C)."""
    http = NexusConfig().server.http
    url = f"http://{http.host}:{http.port}/mcp"
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {part}"], cwd=reader.work, env=reader.env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        token = _answering(url, config_dir(reader.home) / "http-token", proc)

        async def tools() -> int:
            with anyio.fail_after(TIMEOUT):
                async with http_client(url, token=token) as client:
                    return len((await client.list_tools()).tools)

        return None if anyio.run(tools) else f"listed no tools on {url}"
    except (TimeoutError, OSError) as exc:
        return f"{url} did not answer: {exc}"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            output, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            output = "(did not stop on SIGINT within 30 s)"
        if proc.returncode not in (0, -signal.SIGINT, 130):
            reader.failures.append(f"`{part}` stopped with status {proc.returncode}: {output[-1000:]}")


def _answering(url: str, token_file: Path, proc: subprocess.Popen[str]) -> str:
    """The token, once ``url`` answers (401 without it) and the token is written; an error if ``proc`` ends."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise OSError(
                f"the command ended with status {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}"
            )
        try:
            answered = httpx2.post(url, json={}, timeout=2).status_code
        except httpx2.HTTPError:
            answered = 0
        if answered == 401 and token_file.is_file():
            return token_file.read_text(encoding="utf-8").strip()
        time.sleep(0.1)
    raise TimeoutError(f"nothing answered within {TIMEOUT} s")


def _link_answers(reader: Reader, stdout: str) -> str | None:
    """``nexus console`` printed a login link: the console must answer it."""
    links = re.findall(r"https?://\S+", stdout)
    if not links:
        return f"printed no link: {stdout[-500:]}"
    answer = httpx2.get(links[0], follow_redirects=True, timeout=30)
    return None if answer.status_code < 400 else f"{links[0]} answered {answer.status_code}"


# Servers, started and checked by these instead of waiting for them to end.
SERVED: list[tuple[str, Callable[[Reader, str], str | None]]] = [
    (r"\bnexus serve\b.*--transport (http|sse)", _serve_http),  # sse serves /mcp beside /sse
    (r"\bnexus serve\b", _serve_stdio),
]
# What a command that ended must have done besides ending well.
AFTER: list[tuple[str, Callable[[Reader, str], str | None]]] = [(r"\bnexus console\b", _link_answers)]


def _read(page: Path, root: Path) -> tuple[int, list[str]]:
    """Run ``page``'s commands as its reader would; how many ran, and what failed."""
    home, work = root / "home", root / "work"
    for folder in READERS_OWN:
        (home / folder).mkdir(parents=True)
    work.mkdir()
    (work / ".venv").symlink_to(REPO / ".venv")  # the reader is in the checkout, after scripts/setup
    env = home_env(home, PATH=f"{REPO / '.venv' / 'bin'}:{home_env(home)['PATH']}")
    env["BROWSER"] = shutil.which("true") or "true"  # `nexus console` opens nothing; its link is checked instead
    reader = Reader(home, work, env, [])
    try:
        ran = sum(reader.run(command) for block in shell_blocks(page) for command in block)
    finally:
        reader.close()
    return ran, reader.failures


def test_every_shell_command_in_the_readme_and_docs_runs_as_written(tmp_path: Path) -> None:
    pages = [page for page in PAGES if shell_blocks(page)]
    with ThreadPoolExecutor(len(pages)) as pool:
        results = list(pool.map(lambda page: _read(page, tmp_path / page.stem), pages))
    failures = [failure for _, page_failures in results for failure in page_failures]
    assert not failures, "\n\n".join(failures)
    assert sum(ran for ran, _ in results) >= 15  # the pages' commands were found and run


def test_every_block_of_commands_is_tagged_as_shell() -> None:
    """An untagged block of commands would never run: each must say it is shell."""
    untagged = []
    for page in PAGES:
        for block in re.findall(r"^\s*```\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.M):
            first = block.strip().splitlines()[0] if block.strip() else ""
            if re.match(r"^(\$ )?(nexus|\.venv/|scripts/|pip|uv|source|cd) ", first):
                untagged.append(f"{page.name}: {first}")
    assert not untagged, f"tag these blocks ```bash so that they are run: {untagged}"
