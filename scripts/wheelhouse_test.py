"""Wheels that compose: build every distribution, install them by name into fresh virtualenvs, serve, call.

1. ``uv build --all-packages`` makes the sdist of each distribution, then its wheel from that sdist,
   into a temporary wheelhouse (so an sdist that misses a file fails here).
2. A fresh virtualenv gets the host and the memory plugin: their third-party requirements (read from
   the wheels' metadata) from the package index (by uv), then the first-party wheels by name, by pip, with
   ``--no-index --no-deps --find-links WHEELHOUSE`` and no pip config: no index is ever asked for a
   first-party name, so a registry package of the same name cannot be picked up. ``pip check`` then
   proves every requirement is met.
3. The venv's own ``nexus serve`` (started outside the repository) stores a memory and recalls it by
   meaning through the official MCP client, which loads the tokenizer shipped in the memory wheel and
   the model its dependency ships.
4. The other plugins are added the same way; every plugin answers one call, the bridge through a
   second ``nexus serve`` of the same venv that it mounts.

Usage: scripts/wheelhouse-test [--keep]   (--keep leaves the temporary folder and prints it)
"""

from __future__ import annotations

import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[1]
FOLDERS = [REPO, *sorted((REPO / "plugins").glob("nexus_*")), *sorted((REPO / "examples").glob("nexus_*"))]
CORE, MEMORY = "nexus-stack-core", "nexus-stack-memory"
UV = Path(sys.executable).parent / "uv"  # a dev dependency: builds and installs third-party packages ~10x faster


def step(message: str) -> None:
    print(f"[{time.monotonic() - START:6.1f}s] {message}", file=sys.stderr, flush=True)


def run(*cmd: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, cwd=cwd)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def dist_name(folder: Path) -> str:
    return tomllib.loads((folder / "pyproject.toml").read_text())["project"]["name"]


def build(wheelhouse: Path) -> dict[str, Path]:
    """Every distribution's sdist, and its wheel built from that sdist. Returns the wheels by name."""
    run(UV, "build", "--all-packages", "--out-dir", wheelhouse, cwd=REPO)
    wheels = {}
    for folder in FOLDERS:
        stem = dist_name(folder).replace("-", "_")
        assert len(list(wheelhouse.glob(f"{stem}-*.tar.gz"))) == 1, f"no sdist of {stem}"
        (wheel,) = wheelhouse.glob(f"{stem}-*-py3-none-any.whl")
        wheels[dist_name(folder)] = wheel
    return wheels


def metadata(wheel: Path) -> Any:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(zf.read(name).decode())


def check_memory_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    for data in ("nexus_memory/data/tokenizer.json", "nexus_memory/data/NOTICE"):
        assert data in names, f"{wheel.name} lacks {data}"


def third_party(wheels: dict[str, Path], names: list[str]) -> list[str]:
    """The requirements of ``names`` that are not first-party (extras' requirements left out)."""
    requirements = []
    for name in names:
        for req in metadata(wheels[name]).get_all("Requires-Dist") or []:
            project = re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", req).group()).lower()
            if "extra ==" not in req and project not in wheels:
                requirements.append(req)
    return sorted(set(requirements))


def install(venv: Path, wheelhouse: Path, wheels: dict[str, Path], names: list[str]) -> None:
    requirements = third_party(wheels, names)
    if requirements:
        run(UV, "pip", "install", "--quiet", "--python", venv / "bin/python", *requirements)
    pip = [venv / "bin/python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    # Only the wheelhouse: no index, no pip config (its find-links and extra indexes), no dependencies.
    isolated = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull}
    run(*pip, "--no-index", "--no-deps", "--find-links", wheelhouse, *names, env=isolated)
    run(venv / "bin/python", "-m", "pip", "check")
    installed = json.loads(run(venv / "bin/python", "-m", "pip", "list", "--format=json"))
    versions = {p["name"]: p["version"] for p in installed}
    for name in names:
        assert versions.get(name) == metadata(wheels[name])["Version"], f"{name} is not the wheelhouse's"


def server_env(home: Path, venv: Path) -> dict[str, str]:
    """What a desktop client gives a server it starts: a small environment, nothing of this repository.

    Its own home folder, so the shared server ``nexus serve`` relays to is this test's alone.
    """
    return {"HOME": str(home), "PATH": f"{venv / 'bin'}:/usr/bin:/bin"}


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}: {result.content}"
    return result.structured_content


async def serve_and_check(venv: Path, work: Path, config: Path, everything: bool) -> None:
    env = server_env(work, venv)
    params = StdioServerParameters(
        command=str(venv / "bin/nexus"), args=["serve", "--config", str(config)], env=env, cwd=work
    )
    try:
        await check_session(params, everything)
    finally:  # the shared server the relay started would otherwise wait for its idle timeout
        run(venv / "bin/nexus", "server", "stop", "--config", config, env=env, cwd=work)


async def check_session(params: StdioServerParameters, everything: bool) -> None:
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        stored = await call(
            session,
            "store_memory",
            content="The flaky login test was fixed by waiting for the session cookie before asserting.",
            context_name="wheelhouse",
            tags=["testing", "auth"],
            memory_type="success",
        )
        recalled = await call(session, "recall_memories", query="authentication test sometimes fails", limit=1)
        assert recalled["memories"][0]["id"] == stored["memory_id"], recalled  # the design's field names
        step(f"  stored and recalled a memory by meaning ({len(tools)} tools listed)")
        if everything:
            assert (await call(session, "inner_hello", name="Bo"))["text"] == "Hello, Bo!"  # through the bridge
            assert "README.md" in json.dumps(await call(session, "read_file", path="README.md"))
            assert await call(session, "search_knowledge", query="wheel") is not None
            assert (await call(session, "list_entities", library_name="notes"))["entities"] == ["wheels"]
            step("  every plugin answered a call (files, graph, manual; hello through the bridge)")
        else:
            assert "read_file" not in tools and "search_knowledge" not in tools, "a plugin not installed is listed"


def write_config(work: Path, venv: Path, everything: bool) -> Path:
    text = f'[server]\ndata_dir = "{work / "data"}"\nroots = ["{work}"]\n'
    if everything:
        inner = work / "inner.toml"
        inner.write_text(
            f'[server]\ndata_dir = "{work / "inner-data"}"\nroots = ["{work}"]\n'
            + "".join(f"[plugins.{p}]\nenabled = false\n" for p in ("memory", "files", "graph", "manual", "bridge"))
        )
        (work / "notes").mkdir()
        (work / "notes/wheels.md").write_text("# wheels\n\nBuilt from the sdist.\n")
        text += (  # hello is served by the inner server only, through the bridge
            "[plugins.hello]\nenabled = false\n"
            f'[plugins.manual.libraries]\nnotes = "{work / "notes"}"\n'
            "[plugins.bridge.servers.inner]\n"
            f'type = "stdio"\ncommand = "{venv / "bin/nexus"}"\n'
            f'args = ["serve", "--standalone", "--config", "{inner}"]\n'
        )
    config = work / "nexus.toml"
    config.write_text(text)
    return config


def check_imports_from(venv: Path, work: Path, modules: list[str]) -> None:
    """The packages the venv imports are its own, not this repository's folders."""
    code = f"import {', '.join(modules)}; print('\\n'.join(m.__file__ for m in ({', '.join(modules)},)))"
    for path in run(venv / "bin/python", "-c", code, cwd=work).split():
        assert Path(path).is_relative_to(venv), f"{path} is not inside {venv}"


def main() -> None:
    keep = "--keep" in sys.argv
    tmp = Path(tempfile.mkdtemp(prefix="nexus-wheelhouse-"))
    try:
        wheelhouse = tmp / "wheelhouse"
        step(f"building {len(FOLDERS)} distributions (sdist, then the wheel from it) into {wheelhouse}")
        wheels = build(wheelhouse)
        check_memory_wheel(wheels[MEMORY])
        venv, work = tmp / "venv", tmp / "work"
        work.mkdir()
        (work / "README.md").write_text("a file for read_file\n")
        run(sys.executable, "-m", "venv", venv)
        step(f"installing {CORE} and {MEMORY} by name from the wheelhouse")
        install(venv, wheelhouse, wheels, [CORE, MEMORY])
        check_imports_from(venv, work, ["nexus_core", "nexus_memory"])
        anyio.run(serve_and_check, venv, work, write_config(work, venv, everything=False), False)
        others = [name for name in wheels if name not in (CORE, MEMORY)]
        step(f"adding {', '.join(others)}")
        install(venv, wheelhouse, wheels, others)
        versions = run(venv / "bin/nexus", "--version", cwd=work)
        assert all(name in versions for name in wheels if name != CORE), versions
        shutil.rmtree(work / "data")
        anyio.run(serve_and_check, venv, work, write_config(work, venv, everything=True), True)
        step("wheelhouse test passed")
    finally:
        if keep:
            print(tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


START = time.monotonic()
if __name__ == "__main__":
    main()
