"""Every kept benchmark keeps running: at its smoke size it exits cleanly, prints its table and leaves no server.

Not timing tests: no figure is compared with anything, only its presence is checked.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bench.pipe_client import home_env, pct

Run = Callable[..., str]
NUMBER = r"-?\d[\d,]*\.?\d*"


def lines_like(out: str, *patterns: str) -> None:
    for pattern in patterns:
        assert re.search(pattern, out, re.MULTILINE), f"no line matches {pattern!r} in:\n{out}"


def test_pipe_client_helpers(tmp_path) -> None:
    assert pct([3.0, 1.0, 2.0], 0.5) == 2.0 and pct([1.0, 2.0], 0.95) == 2.0
    env = home_env(tmp_path)
    assert env["HOME"] == str(tmp_path) and not any(k.startswith("NEXUS_") for k in env)


def test_transport(run_bench: Run) -> None:
    out = run_bench("transport.py", "--smoke")
    assert "| figure | bare | standalone | relay | standalone / bare | relay / bare | relay / standalone |" in out
    for row in ("cold start to tools/list p50 (ms)", "echo round trip p50 (us)", "echo server CPU per call (us)"):
        lines_like(out, rf"^\| {re.escape(row)} \| {NUMBER} \| {NUMBER} \| {NUMBER} \|")
    lines_like(out, rf"^\| read_file round trip p50 \(us\) \| - \| {NUMBER} \| {NUMBER} \|")
    lines_like(out, rf"^\| resident memory, 1 clients \(MB\) \| - \| {NUMBER} \| {NUMBER} \|")


def test_bridge(run_bench: Run) -> None:
    out = run_bench("bridge_bench.py", "--smoke")
    lines_like(out, rf"^tools/call round trip p50 \(us\)\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$", r"^added p50: ")


def test_tool_bytes(run_bench: Run) -> None:
    out = run_bench("tool_bytes.py", "--smoke")
    lines_like(out, r"^default grants: tools/list reply [\d,]+ bytes", r"^total\s+\d+\s+[\d,]+", r"^profile \w+\s+\d+")
    lines_like(out, r"^tool search\s+2\s+[\d,]+\s+[\d,]+$")


def test_tool_folder(run_bench: Run) -> None:
    out = run_bench("tool_folder_bench.py", "--smoke")
    lines_like(out, r"^\s+100 files\s+[\d.]+", rf"^\s+polling \(Nexus\)\s+{NUMBER}\s+{NUMBER}$")


def test_files(run_bench: Run) -> None:
    out = run_bench("files_bench.py", "--smoke")
    lines_like(out, r"^tree: \d+ files", r"^grep literal .*grep tool \(pure Python\)", r"^glob '\*\.py': .*x git ls")


def test_grep_engines(run_bench: Run) -> None:
    out = run_bench("grep_engines.py", "--smoke")
    lines_like(out, rf"^\s+16\s+{NUMBER}\s+{NUMBER}$", rf"^literal\s+{NUMBER}\s+{NUMBER}", r"^idle [\d,]+/s")


def test_git_status(run_bench: Run) -> None:
    out = run_bench("git_status_bench.py", "--smoke")
    lines_like(out, r"^\s+libgit2: p50 [\d.]+ ms", r"^\s+git: p50 [\d.]+ ms", r"^call ratio libgit2/git p50")


def test_graph(run_bench: Run) -> None:
    out = run_bench("graph_bench.py", "--smoke")
    lines_like(out, r"^search_knowledge via MCP client\s+n=20", r"^get_entropy_report via MCP client", r"^goal entropy")


def test_manual(run_bench: Run) -> None:
    out = run_bench("manual_bench.py", "--smoke")
    lines_like(out, r"^rename_entity, 200 files", r"^read_entities_sections, .* warm p50", r"^add_entities in the")


def test_memory_latency(run_bench: Run) -> None:
    out = run_bench("memory_bench.py", "--smoke")
    assert "| memories | embed (bulk) | add | recall p50 / p95 ms |" in out
    lines_like(out, rf"^\|\s+50 \|\s+{NUMBER} s \|", r"^Server start to first tools/list \(median of 1\)")


def test_memory_start(run_bench: Run) -> None:
    out = run_bench("memory_start_bench.py", "--smoke")
    row = rf"\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$"
    lines_like(out, rf"^spawn to first store_memory reply \(sent at once\){row}", r"^first store_memory after a pause")


def test_cold_start(run_bench: Run) -> None:
    out = run_bench("cold_start.py", "--smoke")
    for row in ("spawn to the initialize reply (ms)", "first store_memory, sent after initialize (ms)"):
        lines_like(out, rf"^\| {re.escape(row)} \| {NUMBER} \({NUMBER}-{NUMBER}\) \|$")
    lines_like(out, rf"^\| shared server RSS after the store and the recall \(MB\) \| {NUMBER} ")
    lines_like(out, rf"^\| the MCP SDK and pydantic \| \+{NUMBER} \| {NUMBER} \|", r"^\| model use loaded")


def test_recall_plugin(run_bench: Run) -> None:
    out = run_bench("recall_plugin.py", "--smoke")
    assert "| configuration | half | R@5 | MRR | paraphrase |" in out
    lines_like(out, r"^\| minilm \| test \| \*\*[\d.]+\*\* \|", r"^- minilm: [\d.]+, lowest kind")


def test_recall_mcp(run_bench: Run) -> None:
    out = run_bench("recall_mcp.py", "--smoke")
    lines_like(out, r"^stored \d+ memories in", r"^\| nexus serve \| test \| \*\*[\d.]+\*\* \|")
    lines_like(out, r"^recall through MCP, again, limit 5, ms: p50 [\d.]+, p95 [\d.]+")


def test_tool_search(run_bench: Run) -> None:
    out = run_bench("tool_search.py", "--smoke")
    lines_like(out, r"^embedder: ", rf"^tune\s+\d+\s+{NUMBER}%\s+{NUMBER}%$", r"^one find_tools ranking over \d+ tools")


def test_soak(run_bench: Run) -> None:
    out = run_bench("soak.py", "--smoke", "--mixed")  # the appends, and the other plugins' calls between them
    lines_like(out, r"^acknowledged writes\s+\d+$", r"^stored writes\s+\d+$", r"^lost writes\s+0$")
    lines_like(out, rf"^server RSS before\s+{NUMBER} MB$", rf"^server RSS after\s+{NUMBER} MB \([+-]{NUMBER} %\)$")
    lines_like(out, r"^memories stored\s+\d+")


def test_soak_where(run_bench: Run) -> None:
    out = run_bench("soak.py", "--smoke", "--where", "5")  # in a process of its own: no server to stop
    lines_like(out, r"^where the memory 5 stores added goes \([\d.]+ vectors a memory\)")
    lines_like(out, rf"^\| Chroma's index \(every vector, measured alone\) \| {NUMBER} \|$")
    lines_like(out, rf"^\| total, anonymous \(freed memory handed back\) \| {NUMBER} \|$")
