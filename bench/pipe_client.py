"""A raw JSON-RPC client for MCP servers over pipes, shared by the benchmarks.

Line-delimited JSON straight over the child's stdin/stdout keeps the client's
own cost out of the figures (no SDK on this side). Replies are read from the
pipe in chunks of up to 1 MiB: a reader that takes a few bytes at a time adds
milliseconds to a large reply and hides the server's own cost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ECHO_PLUGIN = """
from nexus_core import hookimpl
@hookimpl
def nexus_register_tools(register):
    def echo(text: str) -> str:
        return text
    register(echo, category="default", read_only=True)
"""

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


CHUNK = 1 << 20
NEXUS = [sys.executable, "-m", "nexus_core"]


def home_env(home: Path) -> dict[str, str]:
    """The environment for a server the bench starts: a home folder of its own (Nexus's folders follow HOME), so
    a shared server the user runs is never reached, no NEXUS_* settings, bytecode allowed (as after a `pip
    install`). The model cache (XDG_CACHE_HOME, where an opt-in embedder is built) stays the user's."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("NEXUS_", "XDG_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return env | {"HOME": str(home), "XDG_CACHE_HOME": cache, "ANONYMIZED_TELEMETRY": "False"}


def stop_shared(config: Path, env: dict[str, str], nexus: list[str] = NEXUS) -> None:
    """Stop the shared server a relay (`nexus serve` without --standalone) started for ``config``."""
    subprocess.run([*nexus, "server", "stop", "--config", str(config)], env=env, capture_output=True, timeout=60)


class Server:
    """One server process spoken to line by line."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd
        )
        self.next_id = 1
        self._buffer = bytearray()

    def read_message(self) -> dict:
        """The next JSON-RPC message from the server (one line), read in large chunks."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        scanned = 0
        while (end := self._buffer.find(b"\n", scanned)) < 0:
            scanned = len(self._buffer)
            chunk = os.read(fd, CHUNK)
            if not chunk:
                raise EOFError(f"the server exited (code {self.proc.poll()}) before answering")
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return json.loads(line)

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        while True:  # skips notifications, e.g. tools/list_changed when the upstream connects
            reply = self.read_message()
            if reply.get("id") == self.next_id:
                return reply

    def handshake(self) -> None:
        self.send(INITIALIZE)
        while "id" not in self.read_message():  # a server may log or notify before it answers
            pass
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def wait_for_tool(self, name: str, timeout: float = 60.0) -> int:
        """Poll tools/list until `name` is listed (the bridge connects in the background); the tool count."""
        deadline = time.monotonic() + timeout
        while True:
            tools = [t["name"] for t in self.request("tools/list")["result"]["tools"]]
            if name in tools:
                return len(tools)
            if time.monotonic() > deadline:
                raise SystemExit(f"{name} not listed after {timeout:.0f} s; tools: {tools}")
            time.sleep(0.1)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def call_latencies(server: Server, n: int, tool: str = "echo") -> list[float]:
    out = []
    for i in range(n):
        started = time.perf_counter()
        reply = server.request("tools/call", {"name": tool, "arguments": {"text": f"ping {i}"}})
        out.append(time.perf_counter() - started)
        assert reply["result"]["structuredContent"] == {"result": f"ping {i}"}, reply
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
