"""Several tools in one file: TOOLS lists them. Typed parameters are the schema, as for any Nexus tool."""

from pydantic import BaseModel


class Stats(BaseModel):
    lines: int
    words: int
    characters: int


def text_stats(text: str) -> Stats:
    """Count the lines, words and characters of a text."""
    return Stats(lines=len(text.splitlines()), words=len(text.split()), characters=len(text))


def line_count(path: str, context) -> int:
    """Count the lines of a file inside the session's roots."""
    real = context.paths.resolve(path)  # refuses what is outside the roots or deny-listed
    with open(real, encoding="utf-8", errors="replace") as f:
        return sum(1 for _ in f)


TOOLS = [
    {"execute": text_stats, "read_only": True, "idempotent": True},
    {"execute": line_count, "category": "read", "read_only": True},
]
