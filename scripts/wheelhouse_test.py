"""docs/install.md's install, as written: build every distribution, install by name into fresh virtualenvs, serve, call.

1. The install page's command, run from the repository with a fresh virtualenv's ``pip`` first on PATH:
   ``scripts/wheels`` makes the sdist of each distribution, then its wheel from that sdist, into ``dist/`` (so an
   sdist that misses a file fails here); ``pip install --find-links dist`` installs the host and the memory plugin
   by name from there, their third-party requirements from the package index. Every installed first-party file
   must be the one in ``dist/``'s wheel (by its RECORD hash): a registry package of the same name fails the test.
   ``pip check`` then proves every requirement is met.
2. The venv's own ``nexus serve`` (started outside the repository) stores a memory and recalls it by
   meaning through the official MCP client, which loads the tokenizer shipped in the memory wheel and
   the model its dependency ships.
3. The other plugins are added the same way; every plugin answers one call, the bridge through a
   second ``nexus serve`` of the same venv that it mounts.
4. The install page's ``uv tool install`` line, into a temporary tool folder, gives a ``nexus`` that lists its plugins.
5. Run as root (as CI may be), the same venv serves user ``nobody`` (through ``setpriv``): a memory, a file, a graph
   entity and a manual entity written in a home folder of that user's, each store and entity file created private to
   it (0600 files, 0700 folders), and the folders it did not create left as they were. So the venv is made with an
   interpreter every user can run (``/usr/bin/python3`` when this one lives in root's private home), and the
   server is launched where this test runs, a folder nobody may not even search (a private checkout), as a client
   launched in another user's folder would.

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
UV = Path(sys.executable).parent / "uv"  # a dev dependency, pinned: runs docs/install.md's `uv tool install` line


def step(message: str) -> None:
    print(f"[{time.monotonic() - START:6.1f}s] {message}", file=sys.stderr, flush=True)


def run(*cmd: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, cwd=cwd)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def dist_name(folder: Path) -> str:
    return tomllib.loads((folder / "pyproject.toml").read_text())["project"]["name"]


def readme_command(prefix: str) -> str:
    """The install page's command that starts with ``prefix``, without its comment: the test runs what users read."""
    for line in (REPO / "docs" / "install.md").read_text().splitlines():
        if line.startswith(prefix):
            return line.split("  #")[0].strip()
    raise SystemExit(f"docs/install.md has no command starting with {prefix!r}")


def pip_env(venv: Path) -> dict[str, str]:
    """The venv's ``pip`` first on PATH, and no pip config (its find-links and extra indexes): PyPI and dist/ only."""
    keep = {"PIP_CERT", "PIP_DEFAULT_TIMEOUT", "PIP_DISABLE_PIP_VERSION_CHECK"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k in keep}
    return env | {"PIP_CONFIG_FILE": os.devnull, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}


def wheels_in(dist: Path) -> dict[str, Path]:
    """Every distribution's wheel in ``dist``, by name; each has its sdist beside it."""
    wheels = {}
    for folder in FOLDERS:
        stem = dist_name(folder).replace("-", "_")
        assert len(list(dist.glob(f"{stem}-*.tar.gz"))) == 1, f"no sdist of {stem}"
        (wheel,) = dist.glob(f"{stem}-*-py3-none-any.whl")
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


def record(text: str) -> set[tuple[str, str]]:
    """A RECORD's files with their hashes (pip adds .pyc files without one, and rewrites the dist-info)."""
    rows = (line.split(",") for line in text.splitlines() if line)
    return {(path, digest) for path, digest, *_ in rows if digest and ".dist-info/" not in path}


def check_from_dist(venv: Path, wheels: dict[str, Path], names: list[str]) -> None:
    """Each of ``names`` is installed at its wheel's version, every file the wheel's own: no index's package."""
    run(venv / "bin/python", "-m", "pip", "check")
    code = (
        "import sys, importlib.metadata as m; d = m.distribution(sys.argv[1])\nprint(d.version, d.read_text('RECORD'))"
    )
    for name in names:
        version, _, installed = run(venv / "bin/python", "-c", code, name).partition(" ")
        with zipfile.ZipFile(wheels[name]) as zf:
            wanted = record(zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))).decode())
        assert version == metadata(wheels[name])["Version"], f"{name} {version} is not dist/'s"
        assert wanted <= record(installed), f"{name}: the installed files are not those of {wheels[name].name}"


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
    env = server_env(work.parent / "home", venv)  # beside the root, not in it: a root holding HOME is refused
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


NOBODY = 65534


def acts_as_nobody() -> bool:
    """Whether this run can serve user nobody too: as root, with setpriv."""
    return os.getuid() == 0 and shutil.which("setpriv") is not None


def base_python() -> str:
    """An interpreter user nobody can run, for a venv it can run too: this one unless it lives in a private folder."""
    system = Path("/usr/bin/python3")
    if (
        not acts_as_nobody()
        or not system.exists()
        or all(os.stat(p).st_mode & 0o001 for p in Path(sys.executable).resolve().parents)
    ):
        return sys.executable
    return str(system)


def nobody_config(tmp: Path) -> tuple[Path, Path]:
    """A home and a served folder of user nobody's; its ``~/.local`` made here (0755), as a distribution makes it."""
    home, work = tmp / "nobody-home", tmp / "nobody-work"
    (home / ".local/share").mkdir(parents=True)
    (work / "notes").mkdir(parents=True)
    (home / ".config/nexus").mkdir(parents=True)
    config = home / ".config/nexus/nexus.toml"
    config.write_text(
        f'[server]\nroots = ["{work}"]\n[plugins.files]\ncategories = ["read", "search", "write"]\n'
        '[plugins.graph]\ncategories = ["read", "write"]\n[plugins.manual]\ncategories = ["read", "write"]\n'
        f'[plugins.manual.libraries]\nnotes = "{work / "notes"}"\n'
    )
    for path in (home, work, *home.rglob("*"), *work.rglob("*")):
        os.chown(path, NOBODY, NOBODY)
        path.chmod(0o755 if path.is_dir() else 0o644)
    return home, work


async def check_as_nobody(tmp: Path, venv: Path) -> None:
    """The key flows as another, unprivileged user; everything Nexus creates is that user's alone."""
    home, work = nobody_config(tmp)
    env = server_env(home, venv)
    setpriv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    params = StdioServerParameters(command=setpriv[0], args=[*setpriv[1:], str(venv / "bin/nexus"), "serve"], env=env)
    try:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            fact = {"content": "Nobody's deploys go out on Fridays.", "context_name": "ops", "tags": ["deploy"]}
            stored = await call(session, "store_memory", **fact, memory_type="decision")
            recalled = await call(session, "recall_memories", query="when are deploys released", limit=1)
            assert recalled["memories"][0]["id"] == stored["memory_id"], recalled
            await call(session, "write_file", path=str(work / "plan.md"), content="# plan\n")
            entity = {"category": "concepts", "id": "deploys", "type": "process", "name": "Deploys", "desc": "Fridays"}
            await call(session, "add_entity", **entity)
            ops = {"name": "ops", "entity_type": "team", "content": "# ops\n"}
            await call(session, "add_entities", library_name="notes", entities=[ops])
    finally:
        run(*setpriv, venv / "bin/nexus", "server", "stop", env=env, cwd=tmp)
    check_private(home, work)
    step("  as user nobody: stored, recalled and wrote through the venv; everything it made is private")


def check_private(home: Path, work: Path) -> None:
    ours = [home / ".local/share/nexus", home / ".local/state/nexus"]
    made = [*ours, *(p for folder in ours for p in folder.rglob("*")), *(work / "notes").rglob("*")]
    assert len(made) > 5, made
    for path in made:
        st = path.lstat()
        want = 0o700 if path.is_dir() else 0o600
        assert st.st_uid == NOBODY and st.st_mode & 0o777 == want, f"{path}: {oct(st.st_mode)} uid {st.st_uid}"
    for folder in (home / ".local", home / ".local/share", work / "notes"):
        assert folder.stat().st_mode & 0o777 == 0o755, f"{folder} was changed"
    assert (work / "plan.md").stat().st_uid == NOBODY


def check_uv_tool(tmp: Path, venv: Path) -> None:
    """The install page's ``uv tool install`` line gives a ``nexus`` with the plugins it names."""
    command = readme_command("uv tool install --find-links dist ")
    tools = {"UV_TOOL_DIR": str(tmp / "uv-tools"), "UV_TOOL_BIN_DIR": str(tmp / "uv-bin")}
    path = f"{UV.parent}:{os.environ['PATH']}"  # the pinned uv of .venv
    run("bash", "-c", command, env=os.environ | tools | {"PATH": path}, cwd=REPO)
    versions = run(tmp / "uv-bin/nexus", "--version", env=server_env(tmp, venv))
    for name in re.findall(r"--with (\S+)", command):
        assert name in versions, versions
    step(f"  {command}: {versions.splitlines()[0]}, {len(versions.splitlines()) - 2} plugins")


def main() -> None:
    keep = "--keep" in sys.argv
    tmp = Path(tempfile.mkdtemp(prefix="nexus-wheelhouse-"))
    try:
        venv, work = tmp / "venv", tmp / "work"
        work.mkdir()
        (work / "README.md").write_text("a file for read_file\n")
        run(base_python(), "-m", "venv", venv)
        command = readme_command("scripts/wheels && pip install --find-links dist ")
        step(f"the install page's install, in a fresh venv: {command}")
        run("bash", "-c", command, env=pip_env(venv), cwd=REPO)
        wheels = wheels_in(REPO / "dist")
        check_memory_wheel(wheels[MEMORY])
        check_from_dist(venv, wheels, [CORE, MEMORY])
        check_imports_from(venv, work, ["nexus_core", "nexus_memory"])
        anyio.run(serve_and_check, venv, work, write_config(work, venv, everything=False), False)
        others = [name for name in wheels if name not in (CORE, MEMORY)]
        step(f"adding {', '.join(others)}")
        run("bash", "-c", f"pip install --find-links dist {' '.join(others)}", env=pip_env(venv), cwd=REPO)
        check_from_dist(venv, wheels, others)
        versions = run(venv / "bin/nexus", "--version", cwd=work)
        assert all(name in versions for name in wheels if name != CORE), versions
        shutil.rmtree(work / "data")
        anyio.run(serve_and_check, venv, work, write_config(work, venv, everything=True), True)
        check_uv_tool(tmp, venv)
        if acts_as_nobody():
            tmp.chmod(0o755)  # mkdtemp's 0700 would keep nobody out of the venv
            anyio.run(check_as_nobody, tmp, venv)
        step("wheelhouse test passed")
    finally:
        if keep:
            print(tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


START = time.monotonic()
if __name__ == "__main__":
    main()
