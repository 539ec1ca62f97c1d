"""The ``nexus`` command's entry: ``nexus serve`` on stdio goes straight to the relay, without the full CLI.

Desktop clients launch ``nexus serve`` and wait for it; the relay (standard
library only) answers in a few tens of milliseconds, while importing the CLI,
the SDK and pydantic would cost far more. Every other command is the full CLI.
"""

from __future__ import annotations

import sys


def relays(argv: list[str]) -> bool:
    """Whether ``argv`` (after ``nexus``) is a ``serve`` that the relay handles."""
    if argv[:1] != ["serve"]:
        return False
    rest = argv[1:]
    if any(a in ("--standalone", "-h", "--help") for a in rest):
        return False
    transport = next((rest[i + 1] for i, a in enumerate(rest[:-1]) if a == "--transport"), None)
    transport = transport or next((a.split("=", 1)[1] for a in rest if a.startswith("--transport=")), "stdio")
    return transport == "stdio"


def main() -> None:
    argv = sys.argv[1:]
    if relays(argv):
        from nexus_core.serve import relay

        sys.exit(relay.main(argv[1:]))
    from nexus_core.cli.main import main as cli_main

    cli_main()
