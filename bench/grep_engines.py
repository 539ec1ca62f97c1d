"""The pure-Python grep's engine: Python's backtracking `re` against RE2 (google-re2), measured in one run.

    .venv/bin/python bench/grep_engines.py [--mb 20]
    .venv/bin/python bench/grep_engines.py --smoke      # 1 MB, re's worst case up to n = 18 (what the test runs)

Two questions decided the engine used when ripgrep is missing:

- the worst case: ``(a+)+$`` on lines of n 'a's and a '!' (exponential in n for a
  backtracking engine; the GIL is held all along, so every other call of the
  server waits), for growing n (``re`` up to n = 26);
- the ordinary case: throughput (MB/s) on generated source-like text, with the
  plugin's own per-file search (``search_data``) for RE2 and the previous
  per-line ``re`` search, for a literal, a regex and a case-insensitive word
  matching a few hundred lines; and a regex matching most lines, which costs
  per matching line (the tool stops at max_results);
- whether a search lets other threads run: iterations of a counting loop in the
  main thread while a worker thread searches (a held GIL shows as ~0).
"""

from __future__ import annotations

import argparse
import random
import re
import threading
import time

import re2

from nexus_files.grep_engine import Query, compile_query, search_data

# Sparse matches, as searches in a code base usually are (a few hundred lines of 20 MB).
PATTERNS = [("literal", "needle_token_42", True, False), ("regex", r"fn_[a-z]+_\d{4}\(y\)", False, False),
            ("ignore case", "NEEDLE_TOKEN", False, True)]  # fmt: skip


def corpus(mb: int) -> bytes:
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "value", "result", "index", "buffer", "parse", "render", "error"]
    lines = []
    size = 0
    while size < mb * 1024 * 1024:
        a, b, c = (rng.choice(words) for _ in range(3))
        line = f"    {a}_{b} = {c}({rng.randint(0, 9999)}, fn_{a}_{rng.randint(1000, 9999)}(x))"
        if rng.random() < 0.001:
            line += " # needle_token_42"
        if rng.random() < 0.001:
            line += f" fn_{a}_1234(y)"
        lines.append(line)
        size += len(line) + 1
    return ("\n".join(lines) + "\n").encode()


def python_lines(data: bytes, pattern: re.Pattern[str]) -> int:
    """The previous engine: decode, then search line by line."""
    return sum(1 for line in data.decode("utf-8", "replace").split("\n") if pattern.search(line))


def re2_lines(data: bytes, q: Query, limit: int = 10**9) -> int:
    hits = search_data(data, "x", q, compile_query(q), limit, time.monotonic() + 3600)
    return hits.matches if hits else 0


def query(pattern: str, literal: bool, ignore_case: bool) -> Query:
    return Query(pattern, literal, ignore_case, 0, [], [], 10**9, False, 10**10)


def worst_case(most: int = 26) -> None:
    print("(a+)+$ on 'a' * n + '!'  (seconds; 'not run': re would take minutes)")
    print(f"{'n':>4} {'python re':>10} {'re2':>10}")
    for n in (16, 20, 22, 24, 26, 28, 30):
        text = "a" * n + "!"
        started = time.perf_counter()
        python = "not run"
        if n <= most:  # beyond, re runs for minutes (each 'a' doubles its time)
            re.search(r"(a+)+$", text)
            python = f"{time.perf_counter() - started:.3f}"
        started = time.perf_counter()
        re2.compile(r"(a+)+$").search(text)
        print(f"{n:>4} {python:>10} {time.perf_counter() - started:>10.5f}")


def throughput(data: bytes) -> None:
    mb = len(data) / 1024 / 1024
    print(f"\nthroughput on {mb:.0f} MB of generated source lines (MB/s, best of 3)")
    print(f"{'pattern':<12} {'python re':>10} {'re2':>10} {'ratio':>7} {'lines':>8}")
    for name, pattern, literal, ignore_case in PATTERNS:
        source = re.escape(pattern) if literal else pattern
        compiled = re.compile(source, re.IGNORECASE if ignore_case else 0)
        q = query(pattern, literal, ignore_case)
        best_py = best_re2 = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            n_py = python_lines(data, compiled)
            best_py = min(best_py, time.perf_counter() - started)
            started = time.perf_counter()
            n_re2 = re2_lines(data, q)
            best_re2 = min(best_re2, time.perf_counter() - started)
        assert n_py == n_re2, (name, n_py, n_re2)
        print(f"{name:<12} {mb / best_py:>10.1f} {mb / best_re2:>10.1f} {best_py / best_re2:>6.1f}x {n_re2:>8}")


def dense(data: bytes) -> None:
    """Nearly every line matches: the tool stops at max_results (default 200), so only the first lines cost."""
    q = query(r"fn_[a-z]+_\d{4}\(", False, False)
    started = time.perf_counter()
    found = re2_lines(data, q, 201)
    print(
        f"\ndense regex (matches on most lines), stopped at 201 lines as grep does: {found} lines in "
        f"{(time.perf_counter() - started) * 1000:.2f} ms; every line, uncapped: ",
        end="",
    )
    started = time.perf_counter()
    found = re2_lines(data, q)
    print(f"{found} lines in {time.perf_counter() - started:.2f} s")


def gil(data: bytes, n: int = 24) -> None:
    print("\nother threads during a search: main-thread loop iterations per second (higher is better)")
    idle = _count_while(lambda: time.sleep(0.2))
    python = _count_while(lambda: re.search(r"(x+x+)+y", "x" * n))
    q = query(r"(x+x+)+y", False, False)
    big = data * 4
    ours = _count_while(lambda: [re2_lines(big, q) for _ in range(2)])
    print(f"idle {idle:,.0f}/s; during python re {python:,.0f}/s; during re2 {ours:,.0f}/s")


def _count_while(work) -> float:
    done = threading.Event()
    worker = threading.Thread(target=lambda: (work(), done.set()))
    count = 0
    started = time.perf_counter()
    worker.start()
    while not done.is_set():
        count += 1
    worker.join()
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="1 MB, re's worst case up to n = 18")
    args = parser.parse_args()
    worst_case(18 if args.smoke else 26)
    data = corpus(1 if args.smoke else args.mb)
    throughput(data)
    dense(data)
    gil(data, 16 if args.smoke else 24)


if __name__ == "__main__":
    main()
