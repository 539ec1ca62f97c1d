"""Nexus side by side with the reference MCP servers: the same work, interleaved in one run.

    .venv/bin/python bench/peers.py                  # full sizes; installs the peers first
    .venv/bin/python bench/peers.py --quick          # small sizes
    .venv/bin/python bench/peers.py --smoke          # tiny and installs nothing (what the test runs)
    .venv/bin/python bench/peers.py --nexus today="nexus serve"    # one column instead of the two defaults

Peers, installed from the package registries into --cache (default
~/.cache/nexus-bench/peers) at pinned versions: @modelcontextprotocol/server-filesystem
and @modelcontextprotocol/server-memory (npm), mcp-server-git (PyPI, own venv),
basic-memory (PyPI, own venv on a Python >= 3.12 found on the machine) and a bare
SDK server with one tool. A peer that cannot be had is printed as SKIPPED with the
reason; the Nexus side of its row is still measured.

Every Nexus variant (--nexus NAME=COMMAND, repeatable; default: standalone =
`nexus serve --standalone` and relay = `nexus serve`, which relays to a shared
server) is started with `--config <file>` appended, all plugins installed, the
audit log on; shared servers run in the bench's own runtime folders and are
stopped at the end. Each Nexus server answers one recall_memories call before
any row is measured: the memory plugin loads its store and embedder in a
background thread after start, which would otherwise compete with the first rows.
Calls go over raw JSON-RPC pipes (bench/pipe_client.py, replies read in 1 MiB
chunks) and are interleaved in blocks (peer, variant 1, variant 2, ...), so
machine noise hits every server alike. Ratios are Nexus p50 / peer p50.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import files_bench
import graph_bench
import memory_bench
from pipe_client import ECHO_PLUGIN, Server, pct

REPO = Path(__file__).resolve().parent.parent
NPM_PINS = {"@modelcontextprotocol/server-filesystem": "2026.8.31", "@modelcontextprotocol/server-memory": "2026.8.31"}
GIT_PIN = ("mcp-server-git", "2026.10.19")
# 0.24.x needs fastmcp 4.1.3, whose certifi>=2026.10.19 is not on the registry yet.
BASIC_MEMORY_PIN = ("basic-memory", "0.23.2")
BARE_SERVER = """
from mcp.server.mcpserver import MCPServer
mcp = MCPServer("bare")
@mcp.tool()
def echo(text: str) -> str:
    return text
mcp.run()
"""


# `nexus serve` relays to the shared server (as clients run it); --standalone serves in its own process.
DEFAULT_VARIANTS = [("standalone", "nexus serve --standalone"), ("relay", "nexus serve")]


@dataclass(frozen=True)
class Sizes:
    """How much data each row works on."""

    graph: int  # entities for the search_knowledge row
    notes: int  # memories / notes for the memory row
    glob_files: int
    scale: tuple[int, ...]  # memories and entities for the scaling rows
    reads: tuple[int, ...]  # bytes of the read_file scaling rows
    grep_files: int
    calls: int  # calls per server on a fast row


FULL = Sizes(1000, 200, 5000, (1000, 10_000, 100_000), (10_000, 1 << 20, 50 << 20), 50_000, 200)
QUICK = Sizes(1000, 200, 5000, (1000, 5000), (10_000, 1 << 20, 5 << 20), 5000, 100)
SMOKE = Sizes(100, 20, 200, (50,), (10_000, 100_000), 200, 4)


# -- the peers ---------------------------------------------------------------------------


@dataclass
class Peer:
    """A reference server's launch command, or why it is not here."""

    name: str
    command: list[str] | None = None
    skipped: str | None = None


def run_quiet(argv: list[str], what: str) -> str | None:
    """Run an install step; None when it worked, else the last line it printed (as the reason)."""
    print(f"installing {what} ...", file=sys.stderr, flush=True)
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode == 0:
        return None
    lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip() and "is ignored" not in ln]
    return f"{what} failed to install: {lines[-1] if lines else f'exit code {proc.returncode}'}"


def npm_peer(cache: Path, package: str, install: bool, args: list[str]) -> Peer:
    name = package.split("/")[-1]
    node = shutil.which("node")
    if node is None:
        return Peer(name, skipped="node is not installed")
    version = NPM_PINS[package]
    # The bridge's tests pin server-memory too (scripts/setup installs it): use that copy when it matches.
    for prefix in (cache / "npm", REPO / "tests" / "bridge" / "npm"):
        manifest = prefix / "node_modules" / package / "package.json"
        if manifest.exists() and json.loads(manifest.read_text())["version"] == version:
            bin_ = json.loads(manifest.read_text())["bin"]
            entry = bin_ if isinstance(bin_, str) else next(iter(bin_.values()))
            return Peer(name, [node, str(manifest.parent / entry), *args])
    if not install:
        return Peer(name, skipped=f"{package}@{version} is not in {cache} (installs nothing in this mode)")
    if shutil.which("npm") is None:
        return Peer(name, skipped="npm is not installed")
    pins = [f"{p}@{v}" for p, v in NPM_PINS.items()]
    cmd = ["npm", "install", "--prefix", str(cache / "npm"), "--no-audit", "--no-fund", "--loglevel=error", *pins]
    if reason := run_quiet(cmd, "the npm peers"):
        return Peer(name, skipped=reason)
    return npm_peer(cache, package, False, args)


def python_at_least(minor: int) -> str | None:
    """A Python 3.<minor>+ interpreter on this machine: on PATH, or one pyenv installed."""
    candidates = [shutil.which(f"python3.{m}") for m in range(minor, 16)]
    candidates += sorted(map(str, Path("~/.pyenv/versions").expanduser().glob("3.*/bin/python3")), reverse=True)
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[1])"], capture_output=True, text=True, check=False
        )
        if probe.returncode == 0 and int(probe.stdout) >= minor:
            return candidate
    return None


def pypi_peer(cache: Path, pin: tuple[str, str], script: str, python: str | None, install: bool) -> Peer:
    package, version = pin
    if python is None:
        return Peer(package, skipped=f"{package} needs Python >= 3.12 and none was found (PATH, ~/.pyenv)")
    venv = cache / f"{package}-venv"
    marker = venv / f".installed-{version}"
    if marker.exists():
        return Peer(package, [str(venv / "bin" / script)])
    if not install:
        return Peer(package, skipped=f"{package}=={version} is not in {cache} (installs nothing in this mode)")
    shutil.rmtree(venv, ignore_errors=True)
    reason = run_quiet([python, "-m", "venv", str(venv)], f"a venv for {package}") or run_quiet(
        [str(venv / "bin" / "pip"), "install", "--quiet", f"{package}=={version}"], f"{package}=={version}"
    )
    if reason:
        return Peer(package, skipped=reason)
    marker.write_text(version)
    return Peer(package, [str(venv / "bin" / script)])


# -- the data ----------------------------------------------------------------------------


def text_file(path: Path, size: int) -> None:
    """``size`` bytes of source-like lines (the same every run)."""
    if path.exists() and path.stat().st_size == size:
        return
    rng = random.Random(size)
    words = ["alpha", "beta", "gamma", "delta", "value", "result", "index", "buffer", "parse", "render"]
    pool = [f"    {rng.choice(words)}_{rng.choice(words)} = {rng.choice(words)}({i})\n" for i in range(500)]
    out, used = [], 0
    while used < size:
        line = rng.choice(pool)
        out.append(line)
        used += len(line)
    path.write_text("".join(out)[: size - 1] + "\n")


def file_tree(root: Path, n: int) -> None:
    """``n`` small files in 50 folders, five extensions (a fifth of them .py)."""
    exts = [".py", ".js", ".md", ".txt", ".c"]
    for i in range(n):
        folder = root / f"pkg{i % 50:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file{i:05d}{exts[i % 5]}").write_text(f"# file {i}\n")


def git_repo(root: Path) -> None:
    """A small repository: 20 committed files, then one staged, two modified and two untracked."""
    root.mkdir(parents=True)
    env = os.environ | {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
                        "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    for i in range(20):
        (root / f"module{i}.py").write_text(f"value = {i}\n")
    git("add", "-A")
    git("commit", "-qm", "start")
    (root / "module0.py").write_text("value = 100\n")
    git("add", "module0.py")
    (root / "module1.py").write_text("value = 101\n")
    (root / "module2.py").write_text("value = 102\n")
    (root / "new.txt").write_text("new\n")
    (root / "notes.md").write_text("notes\n")


def graph_data(folder: Path, n: int) -> tuple[Path, Path, list[str]]:
    """The same n entities (and n relations) as a Nexus graph folder and a server-memory file; queries."""
    graph, memory_file = folder / "graph", folder / "memory.jsonl"
    names = graph_bench.build_folder(graph, n, n)
    entities: dict[str, dict] = {}  # id -> record
    for path in sorted(graph.glob("*/entities.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            entities[record["id"]] = record
    by_name: dict[str, dict] = {}
    for record in entities.values():
        observations = [record["desc"], "tags: " + ", ".join(record["tags"])]
        by_name.setdefault(record["name"], {"type": "entity", "name": record["name"],
                                            "entityType": record["type"], "observations": observations})  # fmt: skip
    lines = [json.dumps(e) for e in by_name.values()]
    for path in sorted(graph.glob("relations/*/*.jsonl")):
        for line in path.read_text().splitlines():
            rel = json.loads(line)
            src, dst = entities[rel["src"]]["name"], entities[rel["dst"]]["name"]
            lines.append(json.dumps({"type": "relation", "from": src, "to": dst, "relationType": rel["rel"]}))
    memory_file.write_text("\n".join(lines) + "\n")
    return graph, memory_file, graph_bench.queries(names, 200)


def memory_store(folder: Path, n: int) -> list[memory_bench.Record]:
    """The memory plugin's store of n generated memories in ``folder`` (kept: embedding 100k takes minutes)."""
    from nexus_memory.config import MemoryConfig
    from nexus_memory.embed import create
    from nexus_memory.store import ChromaStore, recipe_for

    config = MemoryConfig()  # the defaults: a store made with other ones is made again
    records, recipe = memory_bench.generate(n), recipe_for(config.sentences)
    marker = folder / f".complete-{n}-{config.embedder}-{recipe}"
    if marker.exists():
        return records
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    print(f"embedding {n} memories into {folder} ...", file=sys.stderr, flush=True)
    store = ChromaStore(folder, config.collection, create(config.embedder), recipe=recipe)
    memory_bench.bulk_load(store, records)
    store.close()
    marker.write_text("ok")
    return records


def notes_folder(folder: Path, records: list[memory_bench.Record]) -> None:
    """The same memories as basic-memory notes: one Markdown file each, with front matter."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, r in enumerate(records):
        title = f"note {i:05d} {r.context}"
        tags = ", ".join(r.tags)
        (folder / f"note-{i:05d}.md").write_text(
            f"---\ntitle: {title}\ntype: note\ntags: [{tags}]\n---\n\n# {title}\n\n{r.content}\n"
        )


def memory_queries(n: int = 200) -> list[str]:
    rng = random.Random(3)
    m = memory_bench
    return [f"{rng.choice(m.PART)} {rng.choice(m.TECH)} {rng.choice(m.SYMPTOM).split(' ')[0]}" for _ in range(n)]


# -- measuring ---------------------------------------------------------------------------


class CallError(RuntimeError):
    pass


@dataclass
class Target:
    """One side of a row: a server and the tool call it gets (or a command run per call)."""

    name: str
    server: Server | None
    tool: str
    arguments: Callable[[int], dict[str, Any]]
    argv: list[str] | None = None  # a command line instead of a server (rg)
    cwd: Path | None = None

    def call(self, i: int) -> None:
        if self.argv is not None:
            proc = subprocess.run(self.argv, cwd=self.cwd, capture_output=True, check=False)
            if proc.returncode not in (0, 1):
                raise CallError(f"{self.name}: {self.argv[0]} exited {proc.returncode}")
            return
        assert self.server is not None
        reply = self.server.request("tools/call", {"name": self.tool, "arguments": self.arguments(i)})
        result = reply.get("result")
        if result is None or result.get("isError"):
            detail = reply.get("error") or " ".join(c.get("text", "") for c in result.get("content", []))  # type: ignore[union-attr]
            raise CallError(f"{self.name} {self.tool}: {str(detail)[:300]}")


@dataclass
class Row:
    work: str
    peer_label: str
    peer: Target | None
    skipped: str | None
    nexus: dict[str, Target]
    calls: int
    warmup: int = 3
    samples: dict[str, list[float]] = field(default_factory=dict)

    def measure(self) -> None:
        targets = ([self.peer] if self.peer else []) + list(self.nexus.values())
        for target in targets:
            for i in range(self.warmup):
                target.call(i)
        blocks = max(1, min(10, self.calls))
        per_block = max(1, self.calls // blocks)
        self.samples = {t.name: [] for t in targets}
        for b in range(blocks):
            for target in targets[b % len(targets) :] + targets[: b % len(targets)]:
                for k in range(per_block):
                    i = self.warmup + b * per_block + k
                    started = time.perf_counter()
                    target.call(i)
                    self.samples[target.name].append(time.perf_counter() - started)


def ms(values: list[float], q: float) -> float:
    return pct(values, q) * 1000


def table(rows: list[Row], variants: list[str]) -> str:
    head = ["work", "peer", "peer p50 / p95 ms"]
    for v in variants:
        head += [f"{v} p50 / p95 ms", f"{v} / peer"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        if row.peer is not None:
            peer = row.samples[row.peer.name]
            base = pct(peer, 0.5)
            cells = [row.work, row.peer_label, f"{ms(peer, 0.5):.2f} / {ms(peer, 0.95):.2f}"]
        else:
            base = None
            cells = [row.work, row.peer_label, f"SKIPPED: {row.skipped}"]
        for v in variants:
            if v not in row.nexus:  # the row was not run at all (the reason is in the peer column)
                cells += ["-", "-"]
                continue
            s = row.samples[row.nexus[v].name]
            cells.append(f"{ms(s, 0.5):.2f} / {ms(s, 0.95):.2f}")
            cells.append(f"**{pct(s, 0.5) / base:.2f}x**" if base else "-")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


# -- the run -----------------------------------------------------------------------------


def server_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("NEXUS_") and k != "PYTHONDONTWRITEBYTECODE"}


def nexus_home_env(home: Path) -> dict[str, str]:
    """``server_env`` with a home folder of the bench's own, so its shared server is never one the user runs
    (Nexus's folders follow HOME); the built model cache stays the user's."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return server_env() | {"HOME": str(home), "XDG_CACHE_HOME": cache}


def nexus_command(command: str, config: Path) -> list[str]:
    argv = shlex.split(command)
    local = Path(sys.executable).parent / argv[0]
    if "/" not in argv[0] and local.exists():  # `nexus` means this environment's
        argv[0] = str(local)
    return [*argv, "--config", str(config)]


def nexus_config(work: Path, name: str, roots: list[Path], graph: Path, memory: Path) -> Path:
    path = work / f"nexus-{name}.toml"
    path.write_text(
        f"""[server]
data_dir = "{work / ("data-" + name)}"
plugin_dirs = ["{work / "plugins"}"]
roots = {json.dumps([str(r) for r in roots])}

[plugins.files]
max_file_size = {64 << 20}

[plugins.graph]
graph_dir = "{graph}"

[plugins.memory]
data_dir = "{memory}"
"""
    )
    return path


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.sizes = SMOKE if args.smoke else QUICK if args.quick else FULL
        if args.calls:
            self.sizes = Sizes(**{**self.sizes.__dict__, "calls": args.calls})
        self.cache: Path = args.cache.expanduser()
        self.cache.mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix="nexus-peers-"))
        # Data worth keeping between runs (memory stores take minutes to embed, the grep tree to write).
        self.data: Path = self.work if args.smoke else args.data.expanduser()
        self.variants: list[tuple[str, str]] = args.nexus or DEFAULT_VARIANTS
        self.nexus_env = nexus_home_env(self.work / "home")
        self.configs: list[tuple[Path, str]] = []
        self.servers: list[Server] = []
        self.rows: list[Row] = []
        self.scaling: list[Row] = []

    def peers(self) -> dict[str, Peer]:
        install = not (self.args.smoke or self.args.no_install)
        files = self.work / "files"
        peers = {
            "filesystem": npm_peer(self.cache, "@modelcontextprotocol/server-filesystem", install, [str(files)]),
            "memory": npm_peer(self.cache, "@modelcontextprotocol/server-memory", install, []),
            "git": pypi_peer(self.cache, GIT_PIN, "mcp-server-git", sys.executable, install),
            "basic-memory": pypi_peer(self.cache, BASIC_MEMORY_PIN, "basic-memory", python_at_least(12), install),
            "bare": Peer("bare SDK server", [sys.executable, str(self.work / "bare.py")]),
        }
        for peer in peers.values():
            if peer.skipped:
                print(f"SKIPPED {peer.name}: {peer.skipped}", flush=True)
        return peers

    def spawn(self, command: list[str], ready: str, env: dict[str, str] | None = None) -> Server:
        server = Server(command, env or server_env())
        self.servers.append(server)
        server.handshake()
        server.wait_for_tool(ready, timeout=180)
        return server

    def close_all(self) -> None:
        while self.servers:
            server = self.servers.pop()
            try:
                server.close()
            except Exception:
                server.proc.kill()
        while self.configs:  # a relay variant started a shared server for each config: stop it with its own build
            # (another build's `nexus` computes another server key and would not find it)
            config, command = self.configs.pop()
            argv = nexus_command(command, config)
            stop = [*argv[: argv.index("serve")], "server", "stop", "--config", str(config)]
            subprocess.run(stop, env=self.nexus_env, capture_output=True, check=False, timeout=60)

    def nexus(self, name: str, roots: list[Path], graph: Path, memory: Path) -> dict[str, Server]:
        """One server per variant, each on its own copy of the memory store (embedded Chroma serves one process)."""
        servers = {}
        for variant, command in self.variants:
            store = self.work / f"memory-{name}-{variant}"
            if memory.exists():  # a size outside --recall-sizes has no store: the plugin starts an empty one
                shutil.copytree(memory, store, dirs_exist_ok=True)
            config = nexus_config(self.work, f"{name}-{variant}", roots, graph, store)
            self.configs.append((config, command))
            servers[variant] = self.spawn(nexus_command(command, config), "read_file", self.nexus_env)
        for server in servers.values():  # measure the served calls, not the start: let the store finish loading
            server.request("tools/call", {"name": "recall_memories", "arguments": {"query": "warm-up"}})
            # The first read of the graph creates its lock file, and a graph folder changed within the last 2 s is
            # read in a worker thread (timestamps are coarse): measure the settled graph, as a client meets it.
            server.request("tools/call", {"name": "search_knowledge", "arguments": {"query": "warm-up"}})
        time.sleep(2.1)
        return servers

    def row(
        self,
        work: str,
        peer_label: str,
        peer: Peer,
        peer_server: Callable[[], Target] | None,
        nexus: dict[str, Server],
        tool: str,
        arguments: Callable[[int], dict[str, Any]],
        calls: int,
        warmup: int = 3,
    ) -> Row:
        target = None
        skipped = peer.skipped
        if self.args.only and not re.search(self.args.only, work):
            return Row(work, peer_label, None, "not selected (--only)", {}, 0)
        if peer_server is not None and skipped is None:
            target = peer_server()
        row = Row(
            work, peer_label, target, skipped,
            {v: Target(f"{v}", s, tool, arguments) for v, s in nexus.items()},
            max(1, calls), warmup,
        )  # fmt: skip
        print(f"measuring {work} ...", file=sys.stderr, flush=True)
        row.measure()
        print(table([row], [v for v, _ in self.variants]).splitlines()[-1], flush=True)
        return row

    def run(self) -> None:
        s = self.sizes
        (self.work / "plugins").mkdir()
        (self.work / "plugins" / "bench_echo.py").write_text(ECHO_PLUGIN)
        (self.work / "bare.py").write_text(BARE_SERVER)
        files = self.work / "files"
        files.mkdir()
        peers = self.peers()
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; work in {self.work}", flush=True)  # fmt: skip

        for size in s.reads:
            text_file(files / f"read-{size}.txt", size)
        file_tree(files / "tree", s.glob_files)
        git_repo(files / "repo")
        graph, memory_file, graph_queries = graph_data(self.work / "graph-main", s.graph)
        records = memory_store(self.work / "memory-main", s.notes)
        notes_folder(self.work / "notes", records)
        files_bench.TREE = self.data / f"grep-{s.grep_files}"
        files_bench.generate(s.grep_files)
        grep_tree = files_bench.TREE
        queries = memory_queries()

        nexus = self.nexus("main", [files, grep_tree], graph, self.work / "memory-main")
        fs = None
        if peers["filesystem"].command:
            fs = self.spawn([*peers["filesystem"].command, str(grep_tree)], "read_text_file")
        n = s.calls
        ten_k = files / f"read-{s.reads[0]}.txt"
        self.rows.append(self.row(
            f"read_file {s.reads[0] // 1000} KB", "server-filesystem read_text_file", peers["filesystem"],
            lambda: Target("peer", fs, "read_text_file", lambda i: {"path": str(ten_k)}),
            nexus, "read_file", lambda i: {"path": str(ten_k)}, n,
        ))  # fmt: skip
        repo = files / "repo"
        self.rows.append(self.row(
            "git_status, small repository", "mcp-server-git git_status", peers["git"],
            lambda: Target("peer", self.spawn([*peers["git"].command, "--repository", str(repo)], "git_status"),  # type: ignore[misc]
                           "git_status", lambda i: {"repo_path": str(repo)}),
            nexus, "git_status", lambda i: {"repo": str(repo)}, n,
        ))  # fmt: skip
        memory_env = server_env() | {"MEMORY_FILE_PATH": str(memory_file)}
        self.rows.append(self.row(
            f"search_knowledge, {s.graph:,} entities", "server-memory search_nodes", peers["memory"],
            lambda: Target("peer", self.spawn(peers["memory"].command, "search_nodes", memory_env),  # type: ignore[arg-type]
                           "search_nodes", lambda i: {"query": graph_queries[i % len(graph_queries)]}),
            nexus, "search_knowledge", lambda i: {"query": graph_queries[i % len(graph_queries)]}, n, warmup=5,
        ))  # fmt: skip
        self.rows.append(self.row(
            f"memory search, {s.notes} notes", "basic-memory search_notes", peers["basic-memory"],
            lambda: self.basic_memory(peers["basic-memory"], queries, s.notes),
            nexus, "recall_memories", lambda i: {"query": queries[i % len(queries)]}, n, warmup=5,
        ))  # fmt: skip
        tree = files / "tree"
        self.rows.append(self.row(
            f"glob, {s.glob_files:,} files", "server-filesystem search_files", peers["filesystem"],
            lambda: Target("peer", fs, "search_files", lambda i: {"path": str(tree), "pattern": "**/*.py"}),
            nexus, "glob", lambda i: {"pattern": "*.py", "path": str(tree), "limit": 10_000}, max(3, n // 10),
        ))  # fmt: skip
        self.rows.append(self.row(
            "trivial tool call (echo)", "bare SDK server", peers["bare"],
            lambda: Target("peer", self.spawn(peers["bare"].command, "echo"), "echo", lambda i: {"text": f"ping {i}"}),  # type: ignore[arg-type]
            nexus, "echo", lambda i: {"text": f"ping {i}"}, n,
        ))  # fmt: skip

        # Scaling rows on the same servers: read_file against server-filesystem's first 2000 lines, grep against rg.
        for size in s.reads:
            path = files / f"read-{size}.txt"
            self.scaling.append(self.row(
                f"read_file {human(size)} (first 2000 lines)", "server-filesystem read_text_file head=2000",
                peers["filesystem"],
                lambda p=path: Target("peer", fs, "read_text_file", lambda i: {"path": str(p), "head": 2000}),
                nexus, "read_file", lambda i, p=path: {"path": str(p)}, max(3, n // 10 if size > 1 << 20 else n),
            ))  # fmt: skip
        rg = shutil.which("rg") or files_bench.ripgrep("always", None)
        rg_argv = [rg, "-n", *files_bench.RG_WALK_FLAGS, "--case-sensitive", "-F", "-e", files_bench.LITERAL, "."]
        grep_args = {"pattern": files_bench.LITERAL, "path": str(grep_tree), "literal": True, "case": "sensitive",
                     "max_results": 5000}  # fmt: skip
        rg_peer = Peer("rg", [rg]) if rg else Peer("rg", skipped="no rg binary")
        self.scaling.append(self.row(
            f"grep, {s.grep_files:,} files", "rg -n (CLI)", rg_peer,
            lambda: Target("peer", None, "", lambda i: {}, argv=rg_argv, cwd=grep_tree),
            nexus, "grep", lambda i: grep_args, max(3, n // 40), warmup=1,
        ))  # fmt: skip
        self.close_all()

        recall_sizes = s.scale if self.args.recall_sizes is None else self.args.recall_sizes
        for size in s.scale:
            folder = self.work / f"graph-{size}"
            graph, memory_file, graph_queries = graph_data(folder, size)
            recall = size in recall_sizes
            if recall:
                memory_store(self.data / f"memory-{size}", size)
            nexus = self.nexus(f"scale-{size}", [files], graph, self.data / f"memory-{size}")
            env = server_env() | {"MEMORY_FILE_PATH": str(memory_file)}
            self.scaling.append(self.row(
                f"search_knowledge, {size:,} entities", "server-memory search_nodes", peers["memory"],
                lambda env=env, gq=graph_queries: Target(  # type: ignore[misc]
                    "peer", self.spawn(peers["memory"].command, "search_nodes", env), "search_nodes",  # type: ignore[arg-type]
                    lambda i: {"query": gq[i % len(gq)]}),
                nexus, "search_knowledge", lambda i, gq=graph_queries: {"query": gq[i % len(gq)]},
                n if size <= 10_000 else max(3, n // 10), warmup=5,
            ))  # fmt: skip
            if recall:
                self.scaling.append(self.row(
                    f"recall_memories, {size:,} memories", "(no peer)", Peer("none", skipped="no peer at this size"),
                    None, nexus, "recall_memories", lambda i: {"query": queries[i % len(queries)]}, n, warmup=5,
                ))  # fmt: skip
            else:
                reason = f"not run: {size:,} is not in --recall-sizes (embedding them takes minutes to hours)"
                print(f"SKIPPED recall_memories, {size:,} memories: {reason}", flush=True)
                self.scaling.append(Row(f"recall_memories, {size:,} memories", "(no peer)", None, reason, {}, 0))
            self.close_all()

    def basic_memory(self, peer: Peer, queries: list[str], notes: int) -> Target:
        """basic-memory on the notes folder, with every note indexed before the timing starts.

        Its semantic search is off: it would download an embedding model at run time, which
        this machine cannot. search_notes then runs SQLite full-text search.
        """
        assert peer.command is not None
        home = self.work / "basic-memory"
        env = server_env() | {
            "HOME": str(home), "BASIC_MEMORY_HOME": str(self.work / "notes"),
            "BASIC_MEMORY_CONFIG_DIR": str(home / "config"), "BASIC_MEMORY_SEMANTIC_SEARCH_ENABLED": "false",
            "BASIC_MEMORY_LOG_LEVEL": "WARNING",
        }  # fmt: skip
        server = self.spawn([*peer.command, "mcp"], "search_notes", env)
        deadline = time.monotonic() + 300
        while True:  # it indexes the folder in the background after start
            probe = {"query": "Cause", "page_size": notes + 10, "output_format": "json"}
            reply = server.request("tools/call", {"name": "search_notes", "arguments": probe})
            found = (reply.get("result", {}).get("structuredContent") or {}).get("result", {}).get("total", 0)
            if found >= notes:
                break
            if time.monotonic() > deadline:
                raise CallError(f"basic-memory indexed {found} of {notes} notes in 300 s")
            time.sleep(0.5)
        return Target("peer", server, "search_notes", lambda i: {"query": queries[i % len(queries)]})


def human(size: int) -> str:
    return f"{size >> 20} MB" if size >= 1 << 20 else f"{size // 1000} KB"


def variant(text: str) -> tuple[str, str]:
    name, sep, command = text.partition("=")
    if not sep or not re.fullmatch(r"[\w.-]+", name) or not command.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=COMMAND, e.g. relay='nexus serve'; got {text!r}")
    return name, command


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nexus", type=variant, action="append", metavar="NAME=COMMAND",
                        help="a Nexus variant to measure (repeatable); default: standalone and relay")  # fmt: skip
    cache = Path(os.environ.get("NEXUS_BENCH_CACHE", "~/.cache/nexus-bench"))
    parser.add_argument("--cache", type=Path, default=cache / "peers", help="where the peers are installed")
    parser.add_argument("--data", type=Path, default=cache / "data", help="generated data kept between runs")
    parser.add_argument("--calls", type=int, help="calls per server on a fast row (slow rows do fewer)")
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, a few calls, installs nothing")
    parser.add_argument("--no-install", action="store_true", help="use only peers already in the cache")
    parser.add_argument("--only", metavar="REGEX", help="measure only the rows whose work matches")
    parser.add_argument("--recall-sizes", type=int, nargs="*", help="scaling sizes to run recall at (default all)")
    args = parser.parse_args()
    bench = Bench(args)
    started = time.perf_counter()
    try:
        bench.run()
    finally:
        bench.close_all()
        shutil.rmtree(bench.work, ignore_errors=True)
    variants = [v for v, _ in bench.variants]
    print()
    for name, command in bench.variants:
        print(f"nexus variant {name}: {command}")
    print(f"load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {time.perf_counter() - started:.0f} s")
    print()
    print(table(bench.rows, variants))
    print()
    print("Scaling")
    print()
    print(table(bench.scaling, variants))


if __name__ == "__main__":
    main()
