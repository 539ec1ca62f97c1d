"""What every command prints the same way: a failure on stderr, and tables."""

from __future__ import annotations

import sys
from typing import NoReturn

import click


def fail(message: str, code: int = 2) -> NoReturn:
    """``nexus: MESSAGE`` on stderr, then exit with ``code`` (2: a usage or config error)."""
    click.echo(f"nexus: {message}", err=True)
    sys.exit(code)


def table(rows: list[tuple[str, ...]]) -> None:
    """Rows in columns as wide as their widest cell; the first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
